// PCIe Access Control Services from a device's configuration space (sysfs `config`). ACS
// Request/Completion Redirect on a switch port sends GPU<->NIC peer traffic up to the root
// complex, which halves GPUDirect RDMA bandwidth or breaks it. Hand-written: reading one
// extended capability does not justify pulling in libpci, and it must work on fixture blobs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fabkit::probes {

inline constexpr uint16_t kPcieExtCapAcs = 0x000d;  // PCIe base spec 7.7.11
inline constexpr size_t kPcieExtConfigStart = 0x100;
inline constexpr size_t kPcieConfigSpaceBytes = 4096;
// ACS Control register bits (offset +6 from the capability header).
inline constexpr uint16_t kAcsSourceValidation = 1u << 0;
inline constexpr uint16_t kAcsTranslationBlocking = 1u << 1;
inline constexpr uint16_t kAcsRequestRedirect = 1u << 2;
inline constexpr uint16_t kAcsCompletionRedirect = 1u << 3;
inline constexpr uint16_t kAcsUpstreamForwarding = 1u << 4;
inline constexpr uint16_t kAcsEgressControl = 1u << 5;
inline constexpr uint16_t kAcsP2pRedirectMask =
    kAcsRequestRedirect | kAcsCompletionRedirect | kAcsEgressControl;

enum class AcsState { kUnknown, kNotPresent, kDisabled, kRedirecting };
const char* to_string(AcsState s);  // "unknown", "not-present", "disabled", "redirecting"

struct AcsReading {
  AcsState state = AcsState::kUnknown;
  std::optional<uint16_t> capability;  // ACS Capability register
  std::optional<uint16_t> control;     // ACS Control register
  std::optional<size_t> offset;        // of the ACS extended capability header
  std::string reason;                  // why unknown (short read: needs root)
};

// config: the bytes read from sysfs `config`. Unprivileged reads return only the first 64 (or
// 256) bytes; then the extended space is not visible and the state is unknown, never a guess.
AcsReading parse_acs_from_config(const std::string& config);

}  // namespace fabkit::probes
