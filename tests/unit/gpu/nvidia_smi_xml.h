// `nvidia-smi -q -x` read with pugixml, for the test that checks the GPU probe's live NVML facts
// against nvidia-smi (a separate program over the same driver). Only the fields that test
// compares: ECC mode and counts, clock event reasons, PCIe generation/width, remapped rows.
// Element names as
// nvidia-smi writes them (nvsmi_device_v12/v13 DTDs): drivers up to R535 wrote
// <clocks_throttle_reasons>/<clocks_throttle_reason_*>, later ones <clocks_event_reasons>/
// <clocks_event_reason_*>; "N/A" is what nvidia-smi prints where NVML answers Not Supported.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace fabkit::testing {

// ecc_errors/volatile or /aggregate: nvidia-smi's SRAM and DRAM rows. Drivers before R550 write one
// <sram_uncorrectable>, later ones <sram_uncorrectable_parity> and <sram_uncorrectable_secded>,
// summed here.
struct SmiEccScope {
  std::optional<uint64_t> sram_corrected, sram_uncorrected, dram_corrected, dram_uncorrected;
};

struct SmiGpu {
  std::optional<bool> ecc_enabled;               // ecc_mode/current_ecc
  SmiEccScope ecc_volatile, ecc_aggregate;
  std::optional<std::set<std::string>> reasons;  // active reasons: "hw_slowdown", "gpu_idle"...
  std::optional<int> pcie_gen_current, pcie_gen_max, pcie_width_current, pcie_width_max;
  bool remap_known = false;  // remapped_rows is not N/A
  std::optional<int> remap_corrected, remap_uncorrected;
  std::optional<bool> remap_pending, remap_failure;
};

// By bus id in sysfs form ("0000:18:00.0"). Throws std::invalid_argument on XML that does not
// parse or is not an nvidia_smi_log.
std::map<std::string, SmiGpu> parse_nvidia_smi_xml(const std::string& xml);

}  // namespace fabkit::testing
