// NVLink and NVSwitch fabric findings. Which inactive link is "down" depends on the system:
//  - on an NVSwitch system (the GPU answers a fabric state other than Not Supported) every link
//    the GPU reports is cabled to a switch, so each inactive one is down;
//  - elsewhere (PCIe cards with NVLink bridges, or none) the links in use are those the bridges
//    connect, so a GPU is judged against the other GPUs of its model on this node: fewer active
//    links than its best peer is a link down (a bridge missing or failed); no active link on any
//    of them is a node without NVLink connections (info).
#include <map>

#include "probes/gpu/gpu_judge_detail.h"
#include "probes/gpu/nvml_types.h"

namespace fabkit::probes::gpu_detail {
namespace {

const char* kFabricManagerFix =
    "`systemctl status nvidia-fabricmanager`; start it (`systemctl enable --now "
    "nvidia-fabricmanager`) and check its log (/var/log/fabricmanager.log); its version must "
    "equal the driver's (`nv-fabricmanager --version` vs `nvidia-smi`); drain the node until "
    "every GPU's fabric state is Completed";

int active_links(const GpuDevice& d) {
  int n = 0;
  if (d.health.nvlinks)
    for (const auto& l : *d.health.nvlinks) n += l.active ? 1 : 0;
  return n;
}

bool on_nvswitch(const GpuDevice& d) {
  return d.health.fabric && d.health.fabric->state != nvml::kFabricStateNotSupported;
}

std::string link_list(const std::vector<unsigned>& links) {
  std::string s;
  for (unsigned l : links) s += (s.empty() ? "" : ", ") + std::to_string(l);
  return s;
}

void judge_nvlink(const GpuFacts& f, std::vector<Finding>& out) {
  std::map<std::string, int> best;  // GPU model -> most active links of one GPU
  for (const auto& d : f.devices)
    if (d.health.nvlinks) best[d.name] = std::max(best[d.name], active_links(d));
  bool none_anywhere = true;
  for (const auto& [_, n] : best) none_anywhere = none_anywhere && n == 0;
  for (const auto& d : f.devices) {
    if (!d.health.nvlinks) continue;
    const auto& links = *d.health.nvlinks;
    std::vector<unsigned> inactive;
    for (const auto& l : links)
      if (!l.active) inactive.push_back(l.link);
    const int active = active_links(d);
    const std::string counts =
        std::to_string(active) + " of " + std::to_string(links.size()) + " NVLinks active";
    if (on_nvswitch(d) && !inactive.empty()) {
      out.push_back(fail("gpu.nvlink_down", subject_of(d),
                         gpu_name(d) + ": " + counts + " on an NVSwitch system; down: link(s) " +
                             link_list(inactive),
                         "`nvidia-smi nvlink -s -i " + index_text(d) +
                             "`; drain the node, reset the GPU (`nvidia-smi -r -i " +
                             index_text(d) +
                             "`) or reboot; a link that stays down is the GPU baseboard or "
                             "NVSwitch tray (vendor service)"));
    } else if (!on_nvswitch(d) && active < best[d.name]) {
      out.push_back(fail("gpu.nvlink_down", subject_of(d),
                         gpu_name(d) + ": " + counts + " while another " + d.name + " here has " +
                             std::to_string(best[d.name]) + "; inactive: link(s) " +
                             link_list(inactive),
                         "`nvidia-smi nvlink -s -i " + index_text(d) +
                             "`; reseat or replace the NVLink bridge(s) of this GPU, then reset "
                             "it or reboot"));
    }
    std::string errors;
    for (const auto& l : links) {
      uint64_t sum = l.replay.value_or(0) + l.recovery.value_or(0) + l.crc_flit.value_or(0) +
                     l.crc_data.value_or(0);
      if (sum == 0) continue;
      errors += (errors.empty() ? "" : "; ") + std::string("link ") + std::to_string(l.link) +
                ": replay " + std::to_string(l.replay.value_or(0)) + ", recovery " +
                std::to_string(l.recovery.value_or(0)) + ", CRC flit " +
                std::to_string(l.crc_flit.value_or(0)) + ", CRC data " +
                std::to_string(l.crc_data.value_or(0));
    }
    if (!errors.empty())
      out.push_back(warn("gpu.nvlink_errors", subject_of(d),
                         gpu_name(d) + ": NVLink error counters since the driver loaded: " + errors,
                         "watch whether they rise (the Prometheus counters, or `fabcheck report "
                         "--baseline` against a saved run): `nvidia-smi nvlink -e -i " +
                             index_text(d) +
                             "`; a link whose CRC/recovery counts keep rising is a bad NVLink "
                             "connection: reset the GPU, then service the baseboard/bridge"));
  }
  if (!best.empty() && none_anywhere)
    out.push_back(info("gpu.nvlink_inactive", "NVML",
                       "the GPUs have NVLink but no link is active and none is on an NVSwitch "
                       "system: no NVLink bridges here (GPU-to-GPU traffic goes over PCIe)"));
}

void judge_fabric(const GpuDevice& d, std::vector<Finding>& out) {
  if (!on_nvswitch(d)) return;
  const FabricFacts& fab = *d.health.fabric;
  const std::string s = subject_of(d), g = gpu_name(d);
  if (fab.state != nvml::kFabricStateCompleted) {
    out.push_back(fail("gpu.fabric_not_ready", s,
                       g + ": NVSwitch fabric state is " + fabric_state_name(fab.state) +
                           (fab.state == nvml::kFabricStateNotStarted
                                ? ": the fabric manager has not registered this GPU "
                                  "(nvidia-fabricmanager not running, or failed)"
                                : ": the GPU is still joining the fabric") +
                           "; CUDA work on it fails until it is Completed",
                       kFabricManagerFix));
    return;
  }
  if (fab.status != nvml::kSuccess) {
    out.push_back(
        fail("gpu.fabric_failed", s,
             g + ": NVSwitch fabric registration completed with an error: " + fab.status_text,
             kFabricManagerFix));
    return;
  }
  if (fab.health_summary == nvml::kFabricHealthUnhealthy) {
    out.push_back(fail(
        "gpu.fabric_failed", s,
        g + ": NVSwitch fabric health is unhealthy (clique " + std::to_string(fab.clique_id) + ")",
        kFabricManagerFix));
    return;
  }
  bool degraded_bw =
      fab.health_mask &&
      ((*fab.health_mask >> nvml::kFabricHealthMaskDegradedBwShift) &
       nvml::kFabricHealthMaskDegradedBwWidth) == nvml::kFabricHealthMaskDegradedBwTrue;
  if (fab.health_summary == nvml::kFabricHealthLimitedCapacity || degraded_bw)
    out.push_back(warn("gpu.fabric_degraded", s,
                       g + ": NVSwitch fabric " +
                           (degraded_bw ? std::string("bandwidth is degraded")
                                        : std::string("health is limited capacity")) +
                           " (a switch or links missing from the GPU's partition)",
                       "`nvidia-smi -q -i " + index_text(d) +
                           " | grep -A8 Fabric`; the fabric manager log "
                           "(/var/log/fabricmanager.log) names the missing trunk or access "
                           "links"));
}

}  // namespace

void judge_links(const GpuFacts& f, std::vector<Finding>& out) {
  judge_nvlink(f, out);
  for (const auto& d : f.devices) judge_fabric(d, out);
}

}  // namespace fabkit::probes::gpu_detail
