#include <algorithm>
#include <set>
#include <sstream>

#include "common/file_reader.h"
#include "probes/gpudirect/gpudirect_facts.h"
#include "topo/topology_json.h"

namespace fabkit::probes {
namespace {

std::vector<std::string> loaded_peer_modules(const std::string& modules) {
  std::vector<std::string> out;
  std::istringstream in(modules);
  std::string line;
  while (std::getline(in, line)) {
    std::string name = line.substr(0, line.find(' '));
    if (name == "nvidia_peermem" || name == "nv_peer_mem") out.push_back(name);
  }
  return out;
}

}  // namespace

GpuDirectFacts gather_gpudirect(const ProbeContext& ctx, const topo::Topology* t,
                                size_t rdma_device_count) {
  GpuDirectFacts f;
  if (t) {
    f.gpu_count = static_cast<int>(t->gpus.size());
    for (const auto& n : t->nics) f.hca_count += n.rdma_capable() ? 1 : 0;
  }
  f.hca_count = std::max<int>(f.hca_count, static_cast<int>(rdma_device_count));
  if (!t) {
    f.reason = "no topology (the locality probe was skipped or failed), so no GPUs are known";
    return f;
  }
  if (f.gpu_count == 0 || f.hca_count == 0) {
    f.reason = std::to_string(f.gpu_count) + " GPU(s) and " + std::to_string(f.hca_count) +
               " RDMA HCA(s): GPUDirect RDMA needs both";
    return f;
  }
  f.applicable = true;

  if (auto m = read_text(ctx.roots.proc / "modules"); ok(m)) {
    f.modules_readable = true;
    f.peer_modules = loaded_peer_modules(value(m));
  }
  f.nvidia_version_line = read_line(ctx.roots.proc / "driver/nvidia/version");
  f.kernel_release = read_line(ctx.roots.proc / "sys/kernel/osrelease");
  if (auto c = read_line(ctx.roots.proc / "cmdline")) f.cmdline = *c;
  f.iommu_units = list_dir(ctx.roots.sys / "class/iommu");

  const auto devices = ctx.roots.sys / "bus/pci/devices";
  std::set<int> seen_bridges;
  std::set<std::string> iommu_checked;
  auto check_iommu = [&](const std::string& bus_id) {
    if (bus_id.empty() || !iommu_checked.insert(bus_id).second) return;
    f.iommu_devices.push_back({bus_id, read_line(devices / bus_id / "iommu_group/type")});
  };
  for (const auto& g : t->gpus) {
    check_iommu(g.bus_id);
    topo::NicChoice c = topo::nearest_nic(*t, g);
    if (c.nic < 0) continue;
    const topo::Nic& nic = t->nics[c.nic];
    check_iommu(nic.bus_id);
    for (int b : topo::bridges_between(*t, g.pci, nic.pci)) {
      if (!seen_bridges.insert(b).second) continue;
      const std::string& bdf = t->pci[b].bus_id;
      AcsBridge ab{bdf, g.bus_id, topo::nic_label(nic), {}};
      // 4 KiB is the whole config space; unprivileged reads stop at 64/256 bytes.
      auto cfg = read_text(devices / bdf / "config", kPcieConfigSpaceBytes);
      if (ok(cfg)) {
        ab.reading = parse_acs_from_config(value(cfg));
      } else {
        ab.reading.reason = "cannot read config space: " + error(cfg).to_string();
      }
      f.acs.push_back(ab);
    }
  }
  return f;
}

}  // namespace fabkit::probes
