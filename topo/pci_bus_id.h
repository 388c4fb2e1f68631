// PCI bus ids ("0000:0f:00.0"): NCCL writes them lower-case with a 4-digit domain, nvidia-smi and
// NVML upper-case with an 8-digit domain ("00000000:0F:00.0"), lspci without a domain. Compare
// them only after normalising the way NCCL does (its busIdToInt64/int64ToBusId round trip).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fabkit::topo {

struct PciAddress {
  uint32_t domain = 0;    // up to 0xffff in sysfs; NCCL's virtual switches use ffff
  uint32_t bus = 0;       // 0..0xff
  uint32_t device = 0;    // 0..0x1f
  uint32_t function = 0;  // 0..7
};

// Accepts [domain:]bus:device.function in any case, domain of 1..8 hex digits (leading zeros of
// an 8-digit NVML domain are dropped). nullopt when it is not a bus id.
std::optional<PciAddress> parse_pci_address(const std::string& text);
// "dddd:bb:dd.f", lower-case: the form NCCL writes and sysfs uses as directory names.
std::string format_pci_address(const PciAddress& a);
// parse + format; nullopt when text is not a bus id.
std::optional<std::string> normalize_bus_id(const std::string& text);

}  // namespace fabkit::topo
