#include "common/json.h"
#include "probes/locality/locality_facts.h"
#include "topo/topology_json.h"

namespace fabkit::probes {
namespace {

std::string numa_text(int n) { return n >= 0 ? "NUMA " + std::to_string(n) : "NUMA unknown"; }

}  // namespace

std::vector<Finding> judge_topology_locality(const topo::Topology& t, const std::string& where) {
  using topo::PathLevel;
  std::vector<Finding> out;
  int rdma_nics = 0;
  for (const auto& n : t.nics) rdma_nics += n.rdma_capable() ? 1 : 0;
  out.push_back(info("locality.summary", where,
                     std::to_string(t.numa_nodes.size()) + " NUMA node(s), " +
                         std::to_string(t.gpus.size()) + " GPU(s), " +
                         std::to_string(t.nics.size()) + " NIC(s) (" + std::to_string(rdma_nics) +
                         " RDMA-capable)"));
  for (const auto& numa : t.numa_nodes)
    out.push_back(info(
        "locality.numa", numa_text(numa.os_index),
        std::to_string(numa.cpu_count) + " CPU(s) (mask " + numa.cpuset + ")" +
            (numa.memory_bytes ? ", " + std::to_string(*numa.memory_bytes >> 20) + " MiB" : "") +
            (numa.cpu_vendor.empty() ? "" : ", " + numa.cpu_vendor)));
  for (const auto& n : t.nics) {
    std::string speeds;
    for (const auto& net : n.nets)
      if (net.speed_mbps)
        speeds += (speeds.empty() ? "" : ", ") + net.name + " " +
                  std::to_string(*net.speed_mbps / 1000) + " Gb/s";
    out.push_back(info("locality.nic", topo::nic_label(n),
                       "NIC at " + (n.bus_id.empty() ? std::string("no PCI address") : n.bus_id) +
                           ", " + numa_text(n.pci >= 0 ? topo::numa_of(t, n.pci) : -1) +
                           (n.rdma_capable() ? ", RDMA" : ", Ethernet only") +
                           (speeds.empty() ? "" : ", " + speeds)));
  }
  for (const auto& g : t.gpus) {
    if (g.link_peers.empty()) continue;
    std::string links;
    for (const auto& p : g.link_peers)
      links += (links.empty() ? "" : ", ") + p.peer + " " +
               std::to_string(p.bandwidth_mbps / 1000) + " GB/s";
    out.push_back(info("locality.gpu_links", g.bus_id,
                       (g.name.empty() ? std::string("GPU") : g.name) + ": " +
                           std::to_string(g.link_peers.size()) + " link peer(s) (" +
                           g.link_peers.front().via + " in the export): " + links));
  }
  if (t.gpus.empty()) {
    out.push_back(info("locality.no_gpus", where,
                       "no GPU found (by PCI class/vendor: NVIDIA or AMD display/3D/accelerator)"));
    return out;
  }
  if (t.nics.empty()) {
    out.push_back(
        warn("locality.no_nics", where,
             std::to_string(t.gpus.size()) +
                 " GPU(s) but no network device with a PCI address: inter-node traffic "
                 "cannot use RDMA",
             "check that the HCA driver is loaded (`lsmod | grep mlx5`, `ibv_devices`); in "
             "containers pass the devices (--device=/dev/infiniband) and the PCI tree"));
    return out;
  }
  for (const auto& g : t.gpus) {
    topo::NicChoice c = topo::nearest_nic(t, g);
    const topo::Nic& nic = t.nics[c.nic];
    std::string seen = "GPU " + g.bus_id + " (" + numa_text(topo::numa_of(t, g.pci)) +
                       "): nearest NIC " + topo::nic_label(nic) +
                       (nic.bus_id.empty() ? "" : " (" + nic.bus_id + ")") + " at " +
                       topo::to_string(c.level);
    if (!c.equally_near.empty())
      seen += ", " + std::to_string(c.equally_near.size()) + " other(s) as near";
    if (c.level >= PathLevel::kSys) {
      out.push_back(warn(
          "locality.gpu_far_from_nic", g.bus_id,
          seen +
              ": every NIC is across the CPU interconnect, so NCCL traffic from this GPU "
              "crosses NUMA nodes and GPUDirect RDMA is off (NCCL_NET_GDR_LEVEL defaults to PXB)",
          "put a NIC on this GPU's PCIe switch or NUMA node (" +
              numa_text(topo::numa_of(t, g.pci)) +
              "); if one exists, map ranks to it: set NCCL_IB_HCA to the NIC on the GPU's switch "
              "and "
              "bind each rank with CUDA_VISIBLE_DEVICES/--gpu-bind to the GPU beside its NIC"));
    } else if (c.level == PathLevel::kPhb) {
      out.push_back(
          info("locality.gpu_nic_phb", g.bus_id,
               seen + ": same NUMA node but through the CPU root complex; NCCL disables "
                      "GPUDirect RDMA at PHB by default (NCCL_NET_GDR_LEVEL=PXB)",
               "if measured GPUDirect bandwidth through the CPU is good on this platform, "
               "NCCL_NET_GDR_LEVEL=PHB enables it"));
    } else {
      out.push_back(info("locality.gpu_nic", g.bus_id, seen));
    }
  }
  return out;
}

std::vector<Finding> judge_locality(const LocalityFacts& f) {
  if (f.skipped) return {info("locality.skipped", "hwloc", f.skip_reason)};
  if (!f.error.empty() || !f.topology)
    return {
        warn("locality.hwloc_failed", f.input.empty() ? "hwloc" : f.input,
             "hwloc could not load the topology: " + f.error,
             "run `lstopo` to see hwloc's own error; install hwloc 2.x (`apt-get install hwloc`) "
             "and run fabcheck where /sys is visible")};
  return judge_topology_locality(*f.topology, f.input == "live" ? "this node" : f.input);
}

Json to_json(const LocalityFacts& f) {
  Json j = {{"source", f.source},
            {"input", f.input.empty() ? Json(nullptr) : Json(f.input)},
            {"hwloc_version", f.hwloc_version},
            {"skipped", f.skipped},
            {"skip_reason", f.skip_reason.empty() ? Json(nullptr) : Json(f.skip_reason)},
            {"error", f.error.empty() ? Json(nullptr) : Json(f.error)},
            {"load_ms", f.load_ms}};
  if (f.topology) {
    Json model = topo::to_json(*f.topology);
    j["numa_nodes"] = model["numa_nodes"];
    j["gpus"] = model["gpus"];
    j["nics"] = model["nics"];
  } else {
    j["numa_nodes"] = Json::array();
    j["gpus"] = Json::array();
    j["nics"] = Json::array();
  }
  return j;
}

}  // namespace fabkit::probes
