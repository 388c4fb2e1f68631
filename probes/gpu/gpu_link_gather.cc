// NVLinks and the NVSwitch fabric of one GPU. NVLink: the state of every link index NVML knows
// (0..NVML_NVLINK_MAX_LINKS-1), and the CRC/replay/recovery counters of the active ones. A GPU
// without NVLink answers Not Supported for link 0; an index past the GPU's own links (or past an
// older driver's maximum) answers Invalid Argument or Not Supported, and is not a link of it.
// Fabric: the versioned call (v3 struct, then v2 for a driver that predates v3), else the
// unversioned R525 call.
#include <cstdio>

#include "probes/gpu/nvml_call.h"

namespace fabkit::probes::gpu_detail {
namespace {

std::string uuid_text(const unsigned char (&b)[nvml::kFabricUuidLen]) {
  char out[40];
  std::snprintf(out, sizeof out,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return out;
}

void counters(CallLog& log, nvml::Device h, NvLinkFacts& l) {
  const nvml::Table& t = log.table();
  const char* call = "nvmlDeviceGetNvLinkErrorCounter";
  if (!log.present(call, reinterpret_cast<const void*>(t.nvlink_error_counter))) return;
  for (auto [counter, out] : {std::pair{nvml::kNvLinkErrorDlReplay, &l.replay},
                              std::pair{nvml::kNvLinkErrorDlRecovery, &l.recovery},
                              std::pair{nvml::kNvLinkErrorDlCrcFlit, &l.crc_flit},
                              std::pair{nvml::kNvLinkErrorDlCrcData, &l.crc_data}}) {
    unsigned long long v = 0;
    if (log.ok(call, t.nvlink_error_counter(h, l.link, counter, &v))) *out = v;
    if (log.lost()) return;
  }
}

}  // namespace

void gather_links(CallLog& log, nvml::Device h, GpuHealth& health) {
  const nvml::Table& t = log.table();
  const char* call = "nvmlDeviceGetNvLinkState";
  if (!log.present(call, reinterpret_cast<const void*>(t.nvlink_state))) return;
  std::vector<NvLinkFacts> links;
  nvml::Return first = nvml::kSuccess;
  for (unsigned link = 0; link < nvml::kNvLinkMaxLinks; ++link) {
    nvml::EnableState active = 0;
    nvml::Return r = t.nvlink_state(h, link, &active);
    if (link == 0) first = r;
    if (r == nvml::kSuccess) {
      links.push_back({link, active == nvml::kFeatureEnabled, {}, {}, {}, {}});
      continue;
    }
    // A GPU without NVLink: one answer says so for all 36.
    if (link == 0 && unsupported_code(r)) break;
    if (r == nvml::kErrorInvalidArgument || unsupported_code(r)) continue;
    // Any other answer is named (gpu.query_failed) and the other links still asked; a lost GPU
    // stops the loop, since every later call fails the same way.
    log.ok(call, r);
    if (log.lost()) return;
  }
  if (links.empty()) {
    log.not_supported(call, first == nvml::kSuccess ? nvml::kErrorNotSupported : first);
    return;
  }
  for (auto& l : links) {
    if (log.lost()) break;
    if (l.active) counters(log, h, l);  // an inactive link carries no traffic to count
  }
  health.nvlinks = std::move(links);
}

namespace {

// The fields both forms of the fabric answer carry (GpuFabricInfo and GpuFabricInfoV3).
template <typename Info>
FabricFacts fabric_facts(const nvml::Table& t, const char* call, const Info& v) {
  FabricFacts f;
  f.call = call;
  f.state = v.state;
  f.status = v.status;
  f.status_text = nvml::describe(t, v.status);
  f.clique_id = v.clique_id;
  f.cluster_uuid = uuid_text(v.cluster_uuid);
  return f;
}

}  // namespace

void gather_fabric(CallLog& log, nvml::Device h, GpuHealth& health) {
  const nvml::Table& t = log.table();
  const char* kV = "nvmlDeviceGetGpuFabricInfoV";
  const char* kOld = "nvmlDeviceGetGpuFabricInfo";
  if (t.gpu_fabric_info_v) {
    nvml::GpuFabricInfoV3 v{};
    v.version = nvml::kGpuFabricInfoV3;
    nvml::Return r = t.gpu_fabric_info_v(h, &v);
    int version = 3;
    if (r == nvml::kErrorArgumentVersionMismatch) {  // an R550-R575 driver knows v2 only
      v = nvml::GpuFabricInfoV3{};
      v.version = nvml::kGpuFabricInfoV2;
      r = t.gpu_fabric_info_v(h, &v);
      version = 2;
    }
    if (r == nvml::kSuccess) {
      FabricFacts f = fabric_facts(t, kV, v);
      f.struct_version = version;
      f.health_mask = v.health_mask;
      if (version >= 3) f.health_summary = v.health_summary;
      health.fabric = std::move(f);
      return;
    }
    if (!try_older_form(r) || !t.gpu_fabric_info) {
      log.ok(kV, r);
      return;
    }
    log.not_supported(kV, r, std::string("used ") + kOld);
  } else if (t.gpu_fabric_info) {
    log.not_supported(kV, std::nullopt, std::string("used ") + kOld);
  } else {  // drivers before R525: no fabric call at all
    log.not_supported(kV, std::nullopt);
    log.not_supported(kOld, std::nullopt);
    return;
  }
  nvml::GpuFabricInfo v{};
  if (!log.ok(kOld, t.gpu_fabric_info(h, &v))) return;
  health.fabric = fabric_facts(t, kOld, v);
}

}  // namespace fabkit::probes::gpu_detail
