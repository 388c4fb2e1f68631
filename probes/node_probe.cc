// The order matters: later judges see earlier facts (memlock matters only where RDMA devices
// exist; NCCL settings are checked against the HCAs and interfaces found).
#include "probes/node_probe.h"

#include <unistd.h>

#include <map>
#include <memory>

#include "fabkit/config.h"
#include "probes/efa/efa_facts.h"
#include "probes/gpu/gpu_facts.h"
#include "probes/gpudirect/gpudirect_facts.h"
#include "probes/ib_qos/ib_qos_facts.h"
#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/libfabric/libfabric_facts.h"
#include "probes/limits/limits_facts.h"
#include "probes/locality/locality_facts.h"
#include "probes/nccl_env/nccl_env_facts.h"
#include "probes/nccl_net/nccl_net_facts.h"
#include "probes/net/net_facts.h"
#include "probes/pcie/pcie_facts.h"
#include "probes/rdma/rdma_facts.h"
#include "probes/roce_qos/roce_qos_facts.h"
#include "probes/sysroot_refusals.h"
#include "probes/topo_file/topo_file_facts.h"
#if FABKIT_HAVE_VERBS
#include "verbs/ibverbs_api.h"
#endif
#include "verbs/verbs_strings.h"

namespace fabkit {
namespace {

std::string this_hostname(const ProbeContext& ctx) {
  if (!ctx.roots.live) return "sysroot:" + ctx.roots.root.string();
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

void append(std::vector<Finding>& to, std::vector<Finding> from) {
  for (auto& f : from) to.push_back(std::move(f));
}

// One judge per PCIe link. Where sysfs shows a GPU's link (trained and capable, speed and width),
// the pcie probe judges it, with the port above it and the bandwidth lost; NVML reads the same
// link status register, so its gpu.pcie_* findings would only repeat those. NVML's figures stay in
// the gpus section as facts, and judge the link where sysfs cannot (a container's partial /sys).
bool sysfs_shows_link(const probes::PcieFacts& pcie, const std::string& bus_id) {
  for (const auto& d : pcie.devices)
    if (d.bus_id == bus_id)
      return d.current.generation && d.current.width && d.max.generation && d.max.width;
  return false;
}

void drop_links_judged_by_sysfs(std::vector<Finding>& findings, const probes::PcieFacts& pcie) {
  std::vector<Finding> kept;
  for (auto& f : findings) {
    bool nvml_link = f.code.rfind("gpu.pcie_", 0) == 0;
    if (!(nvml_link && sysfs_shows_link(pcie, f.subject))) kept.push_back(std::move(f));
  }
  findings = std::move(kept);
}

// The libfabric judge's view of the other probes: the EFA devices, and the FI_* settings a job
// here would run with.
probes::LibfabricContext libfabric_context(const probes::EfaFacts& efa,
                                           const probes::NcclEnvFacts& nccl_env) {
  probes::LibfabricContext c;
  c.efa_devices = static_cast<int>(efa.devices.size());
  if (const auto* v = probes::find_variable(nccl_env, "FI_PROVIDER")) c.fi_provider = v->value;
  if (const auto* v = probes::find_variable(nccl_env, "FI_EFA_USE_DEVICE_RDMA"))
    c.use_device_rdma = v->value;
  return c;
}

}  // namespace

Report run_node_probe(const ProbeContext& ctx) {
  Report r;
  r.kind = "node";
  r.hostname = this_hostname(ctx);
  r.generated_at = utc_now_rfc3339();

  // 1. Gather (I/O), in dependency order. One progress unit per probe.
  ProgressScope progress(ctx.progress, "node: pcie links", 13);
  // PCIe first: its AER totals are read again after the other probes (the interval without a
  // sleep of its own), and the kernel log names the GPUs and NICs it finds.
  auto pcie = probes::gather_pcie(ctx);
  progress.advance(1, "node: kernel log");
  auto kernel_log = probes::gather_kernel_log(
      ctx, {probes::device_names(pcie), probes::nvidia_gpu_bus_ids(pcie)});
  progress.advance(1, "node: rdma devices and counters");
  auto rdma = probes::gather_rdma(ctx);
  bool has_rdma = probes::device_count(rdma) > 0;
  progress.advance(1, "node: limits");
  auto limits = probes::gather_limits(ctx);
  // NCCL settings before the interfaces: NCCL_SOCKET_IFNAME may come from ~/.nccl.conf or
  // /etc/nccl.conf, not only from the environment.
  progress.advance(1, "node: nccl settings");
  auto nccl_env = probes::gather_nccl_env(ctx);
  // NCCL_NET_PLUGIN, like any NCCL setting, may come from NCCL's config files.
  progress.advance(1, "node: nccl net plugin");
  auto nccl_net = probes::gather_nccl_net(ctx, nccl_env);
  // RoCE QoS after the NCCL settings (NCCL_IB_TC/SL) and the RDMA ports; its counters are read
  // again after the other probes, like the AER totals.
  progress.advance(1, "node: roce qos (dcb, ethtool)");
  auto roce_qos = probes::gather_roce_qos(ctx, rdma, nccl_env);
  // The IB side of the same question: the VL NCCL_IB_SL reaches (three MADs per IB port).
  auto ib_qos = probes::gather_ib_qos(ctx, rdma, nccl_env, ctx.options.ib_peer_gid.value_or(""));
  progress.advance(1, "node: libfabric providers");
  auto libfabric = probes::gather_libfabric(ctx);
  progress.advance(1, "node: interfaces");
  auto net = probes::gather_net(ctx, probes::net_settings(nccl_env));
  progress.advance(1, "node: nccl topology file");
  auto topo_file = probes::gather_topo_file(ctx);
  progress.advance(1, "node: locality (hwloc)");
  auto locality = probes::gather_locality(ctx);
  progress.advance(1, "node: gpus (nvml)");
  auto gpu = probes::gather_gpu(ctx);
  // GPUs and the bridges between them and the NICs come from the locality model.
  progress.advance(1, "node: gpudirect");
  auto gpudirect = probes::gather_gpudirect(ctx, locality.topology ? &*locality.topology : nullptr,
                                            probes::device_count(rdma));
  // EFA after locality (each device's nearest GPU) and the NCCL settings (the FI_* variables).
  auto efa = probes::gather_efa(ctx, rdma, locality.topology ? &*locality.topology : nullptr);
  {
    std::map<std::string, std::string> vars;
    for (const auto& v : nccl_env.variables) vars[v.name] = v.value;
    probes::set_efa_settings(efa, vars);
  }
  probes::reread_pcie_aer(ctx, pcie, ctx.options.rdma_counter_interval_ms);
  probes::reread_roce_qos(roce_qos, ctx.options.rdma_counter_interval_ms);
  progress.advance(1);

  // 2. Judge (pure).
  append(r.findings, probes::judge_rdma(rdma));
  append(r.findings, probes::judge_efa(efa));
  append(r.findings, probes::judge_limits(limits, has_rdma));
  append(r.findings, probes::judge_net(net));
  // NCCL_IB_DISABLE / NCCL_IB_HCA are checked against the RDMA ports found.
  std::vector<probes::RdmaPortBrief> rdma_ports;
  std::vector<std::string> rdma_names;
  for (const auto& d : rdma.devices) {
    rdma_names.push_back(d.name);
    for (const auto& p : d.ports)
      rdma_ports.push_back({d.name, p.port,
                            p.link_layer ? probes::link_layer_name(*p.link_layer) : std::string(),
                            p.state == verbs::PortState::kActive});
  }
  append(r.findings, probes::judge_nccl_env(nccl_env, rdma_ports));
  // Without aws-ofi-nccl, NCCL on an EFA node runs over sockets.
  std::vector<std::string> efa_devices;
  for (const auto& d : efa.devices) efa_devices.push_back(d.name);
  append(r.findings, probes::judge_nccl_net(nccl_net, efa_devices));
  // The nets an NCCL topology file names must exist as RDMA devices here.
  append(r.findings, probes::judge_topo_file(topo_file, rdma_names));
  append(r.findings, probes::judge_locality(locality));
  std::optional<int> pci_gpus;  // NVIDIA GPUs on the PCI bus, to compare with what NVML reports
  if (locality.topology) {
    pci_gpus = 0;
    for (const auto& g : locality.topology->gpus) *pci_gpus += g.vendor_id == 0x10de ? 1 : 0;
  }
  std::vector<Finding> gpu_findings = probes::judge_gpu(gpu, pci_gpus);
  drop_links_judged_by_sysfs(gpu_findings, pcie);
  append(r.findings, std::move(gpu_findings));
  append(r.findings, probes::judge_gpudirect(gpudirect));
  append(r.findings, probes::judge_pcie(pcie));
  append(r.findings, probes::judge_kernel_log(kernel_log));
  append(r.findings, probes::judge_roce_qos(roce_qos));
  append(r.findings, probes::judge_ib_qos(ib_qos));
  append(r.findings, probes::judge_libfabric(libfabric, libfabric_context(efa, nccl_env)));
  // Last: every read above has happened, the AER and counter rereads included.
  if (ctx.roots.tree)
    append(r.findings, probes::judge_sysroot_refusals(ctx.roots.tree->refusals()));

  // 3. Sections, one per probe, in the order above.
  r.sections.push_back({"rdma", probes::to_json(rdma)});
  r.sections.push_back({"efa", probes::to_json(efa)});
  r.sections.push_back({"limits", probes::to_json(limits)});
  r.sections.push_back({"net", probes::to_json(net)});
  r.sections.push_back({"nccl_env", probes::to_json(nccl_env)});
  r.sections.push_back({"nccl_net_plugin", probes::to_json(nccl_net)});
  r.sections.push_back({"topo_file", probes::to_json(topo_file)});
  r.sections.push_back({"locality", probes::to_json(locality)});
  r.sections.push_back({"gpus", probes::to_json(gpu)});
  r.sections.push_back({"gpudirect", probes::to_json(gpudirect)});
  r.sections.push_back({"pcie", probes::to_json(pcie)});
  r.sections.push_back({"kernel_log", probes::to_json(kernel_log)});
  r.sections.push_back({"roce_qos", probes::to_json(roce_qos)});
  r.sections.push_back({"ib_qos", probes::to_json(ib_qos)});
  r.sections.push_back({"libfabric", probes::to_json(libfabric)});
  return r;
}

Report probe_this_node(ProbeContext ctx) {
#if FABKIT_HAVE_VERBS
  std::unique_ptr<verbs::VerbsApi> verbs_api;
  if (ctx.roots.live) {
    verbs_api = verbs::make_ibverbs_api();
    ctx.verbs = verbs_api.get();
  }
#endif
  return run_node_probe(ctx);
}

}  // namespace fabkit
