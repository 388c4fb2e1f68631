#include "topo/topology_json.h"

#include <algorithm>
#include <cstdio>

namespace fabkit::topo {
namespace {

std::string hex4(uint32_t v) {
  char buf[16];
  snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

template <typename T>
Json opt(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json str_or_null(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

}  // namespace

std::string nic_label(const Nic& n) {
  std::string label;
  auto add = [&](const std::string& s) { label += (label.empty() ? "" : ",") + s; };
  for (const auto& net : n.nets) add(net.name);
  if (label.empty())
    for (const auto& d : n.rdma_devices) add(d);
  if (label.empty())
    for (const auto& d : n.netdevs) add(d);
  if (label.empty()) label = n.bus_id.empty() ? "unnamed NIC" : n.bus_id;
  return label;
}

Json nic_to_json(const Topology& t, const Nic& n) {
  Json nets = Json::array();
  for (const auto& net : n.nets)
    nets.push_back({{"name", net.name},
                    {"dev", opt(net.dev)},
                    {"speed_mbps", opt(net.speed_mbps)},
                    {"port", opt(net.port)},
                    {"gdr", opt(net.gdr)},
                    {"guid", str_or_null(net.guid)}});
  int numa = n.pci >= 0 ? numa_of(t, n.pci) : -1;
  return {{"name", nic_label(n)},
          {"bus_id", str_or_null(n.bus_id)},
          {"class", n.class_id ? Json(hex4(n.class_id)) : Json(nullptr)},
          {"numa_node", numa >= 0 ? Json(numa) : Json(nullptr)},
          {"rdma", n.rdma_capable()},
          {"nets", nets},
          {"rdma_devices", n.rdma_devices},
          {"netdevs", n.netdevs}};
}

Json gpu_to_json(const Topology& t, const Gpu& g) {
  NicChoice c = nearest_nic(t, g);
  Json equally = Json::array();
  const size_t listed = std::min(c.equally_near.size(), kMaxEquallyNearListed);
  for (size_t k = 0; k < listed; ++k) equally.push_back(nic_label(t.nics[c.equally_near[k]]));
  int numa = numa_of(t, g.pci);
  Json j = {{"bus_id", g.bus_id},
            {"vendor_id", hex4(g.vendor_id)},
            {"device_id", g.device_id ? Json(hex4(g.device_id)) : Json(nullptr)},
            {"name", str_or_null(g.name)},
            {"numa_node", numa >= 0 ? Json(numa) : Json(nullptr)},
            {"dev", opt(g.dev)},
            {"rank", opt(g.rank)},
            {"sm", opt(g.sm)},
            {"gdr", opt(g.gdr)},
            {"nvlinks", g.nvlinks},
            {"nearest_nic", c.nic >= 0 ? Json(nic_label(t.nics[c.nic])) : Json(nullptr)},
            {"nearest_nic_bus_id", c.nic >= 0 ? str_or_null(t.nics[c.nic].bus_id) : Json(nullptr)},
            {"path_level", c.nic >= 0 ? Json(to_string(c.level)) : Json(nullptr)},
            {"equally_near", equally}};
  // Only when the source has link bandwidths (hwloc's NVLinkBandwidth distances), so the many
  // sources without them keep their documents as they were.
  if (!g.link_peers.empty()) {
    Json peers = Json::array();
    for (const auto& p : g.link_peers)
      peers.push_back({{"peer", p.peer}, {"bandwidth_mbps", p.bandwidth_mbps}, {"via", p.via}});
    j["link_peers"] = peers;
  }
  // Only when the list was cut, like link_peers: real nodes never reach the bound.
  if (c.equally_near.size() > listed) j["equally_near_left_out"] = c.equally_near.size() - listed;
  return j;
}

Json to_json(const Topology& t) {
  Json numa = Json::array();
  for (const auto& n : t.numa_nodes)
    numa.push_back({{"os_index", n.os_index},
                    {"cpuset", n.cpuset},
                    {"cpu_count", n.cpu_count},
                    {"memory_bytes", opt(n.memory_bytes)},
                    {"cpu_vendor", str_or_null(n.cpu_vendor)}});
  Json gpus = Json::array();
  for (const auto& g : t.gpus) gpus.push_back(gpu_to_json(t, g));
  Json nics = Json::array();
  for (const auto& n : t.nics) nics.push_back(nic_to_json(t, n));
  int bridges = 0, devices = 0;
  for (const auto& p : t.pci) {
    bridges += p.kind == PciKind::kBridge;
    devices += p.kind == PciKind::kDevice;
  }
  return {{"source", t.source}, {"numa_nodes", numa},     {"gpus", gpus},
          {"nics", nics},       {"pci_bridges", bridges}, {"pci_devices", devices}};
}

}  // namespace fabkit::topo
