// How the GPU gather files one NVML answer about one GPU: success, "not supported here" (a fact,
// never a fault), or an error named with NVML's text. Shared by gpu_health_gather.cc and
// gpu_link_gather.cc; internal to probes/gpu.
#pragma once

#include <string>

#include "probes/gpu/gpu_facts.h"

namespace fabkit::probes::gpu_detail {

// "<call>: <nvmlErrorString> (NVML error N)"
std::string named(const nvml::Table& t, const char* call, nvml::Return r);

class CallLog {
 public:
  CallLog(const nvml::Table& t, GpuDevice& d) : t_(t), d_(d) {}

  // The entry point exists in this libnvidia-ml; otherwise records it as not supported (no code:
  // the symbol is missing, an older driver) with `note` and returns false.
  bool present(const char* call, const void* fn, const std::string& note = "");
  // r is success. Not Supported (3), Function Not Found (13) and Argument Version Mismatch (25)
  // become a NotSupported fact; any
  // other code an error of this GPU. GPU is lost (15) also marks the GPU lost: the gather stops
  // asking, since every later call fails the same way (and can wait on the dead GPU).
  bool ok(const char* call, nvml::Return r, const std::string& note = "");
  void not_supported(const char* call, std::optional<int> code, const std::string& note = "");
  bool lost() const { return lost_; }
  const nvml::Table& table() const { return t_; }

 private:
  const nvml::Table& t_;
  GpuDevice& d_;
  bool lost_ = false;
};

// true for the codes that mean "this driver or GPU has no such feature": Not Supported, Function
// Not Found, and Argument Version Mismatch (a driver older than the versioned struct asked for).
inline bool unsupported_code(nvml::Return r) {
  return r == nvml::kErrorNotSupported || r == nvml::kErrorFunctionNotFound ||
         r == nvml::kErrorArgumentVersionMismatch;
}

// A newer entry point that answers as if absent: Function Not Found (a libnvidia-ml newer than
// the kernel driver) or Argument Version Mismatch (a driver older than the struct version). The
// probe then asks the older form; Not Supported means the GPU lacks the feature under any name.
inline bool try_older_form(nvml::Return r) {
  return r == nvml::kErrorFunctionNotFound || r == nvml::kErrorArgumentVersionMismatch;
}

void gather_links(CallLog& log, nvml::Device h, GpuHealth& health);   // NVLinks
void gather_fabric(CallLog& log, nvml::Device h, GpuHealth& health);  // NVSwitch fabric

}  // namespace fabkit::probes::gpu_detail
