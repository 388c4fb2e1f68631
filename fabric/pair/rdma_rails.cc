#include "fabric/pair/rdma_rails.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <map>
#include <optional>
#include <set>

#include "verbs/verbs_types.h"

namespace fabkit::pair {
namespace {

struct Port {
  RcPortPair half;  // the A-side fields filled: hca_a, port_a, gid_index_a, link_layer, rate
  std::string subnet;
  int numa = -1;    // the HCA's NUMA node from the report's locality section; -1 unknown
};

// HCA name -> NUMA node, from the node report's locality section (hwloc: nics[].rdma_devices).
std::map<std::string, int> hca_numa(const Json& report) {
  std::map<std::string, int> out;
  if (!report.is_object() || !report.contains("locality") || !report["locality"].is_object()) return out;
  for (const auto& n : report["locality"].value("nics", Json::array())) {
    if (!n.is_object() || !n.value("numa_node", Json()).is_number_integer()) continue;
    for (const auto& d : n.value("rdma_devices", Json::array()))
      if (d.is_string()) out[d.get<std::string>()] = n["numa_node"].get<int>();
  }
  return out;
}

// A string member of a node report an agent sent, or "" when absent or of another type: the
// agent may be hostile or broken, and a port whose link layer is unreadable is not planned on.
std::string text_of(const Json& o, const char* key) {
  const Json v = o.value(key, Json());
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::string hex2(unsigned char b) {
  static const char* d = "0123456789abcdef";
  return {d[b >> 4], d[b & 15]};
}

// The GID text of entry `index` in the port's gids[], or "".
std::string gid_at(const Json& port, int index) {
  for (const auto& g : port.value("gids", Json::array()))
    if (g.is_object() && g.value("index", Json()) == index && g.value("gid", Json()).is_string())
      return g["gid"].get<std::string>();
  return "";
}

// NCCL_IB_GID_INDEX as the host's node report recorded it, when it is a whole number 0..255 (the
// node check reports any other value).
std::optional<int> nccl_gid_index(const Json& report) {
  const std::optional<std::string> text = nccl_env_value(report, "NCCL_IB_GID_INDEX");
  if (!text || text->empty() || text->size() > 3 ||
      text->find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const int n = std::stoi(*text);
  return n <= 255 ? std::optional<int>(n) : std::nullopt;
}

std::vector<Port> active_ports(const Json& report) {
  std::vector<Port> out;
  if (!report.is_object() || !report.contains("rdma") || !report["rdma"].is_object()) return out;
  const auto numa = hca_numa(report);
  const std::optional<int> env_gid = nccl_gid_index(report);
  for (const auto& d : report["rdma"].value("devices", Json::array())) {
    if (!d.is_object() || !d.value("name", Json()).is_string()) continue;
    for (const auto& p : d.value("ports", Json::array())) {
      if (!p.is_object() || p.value("state", Json()) != "ACTIVE") continue;
      // A RoCE port whose netdev lives in another network namespace (a container on a shared-RDMA
      // host sees every RDMA device) carries no traffic of this host's: not a port to test.
      if (text_of(p, "netdev_place") == "other_namespace") continue;
      // EFA ("Unspecified") offers SRD, not the RC queue pairs this test opens: libfabric's.
      if (text_of(p, "link_layer") == "Unspecified") continue;
      Port a;
      a.half.hca_a = d["name"].get<std::string>();
      a.half.port_a = p.value("port", Json(1)).is_number_integer() ? p["port"].get<int>() : 1;
      a.half.link_layer = text_of(p, "link_layer");
      // RoCE uses the GID index NCCL will: NCCL_IB_GID_INDEX where the host sets it (a wrong one
      // is then caught here, before a job), else the probe's RoCE v2 GID. InfiniBand addresses by
      // LID (no GRH, -1).
      const Json gid = p.value("roce_v2_gid_index", Json());
      if (a.half.link_layer == "Ethernet" && env_gid) a.half.gid_index_a = *env_gid;
      else if (a.half.link_layer == "Ethernet" && gid.is_number_integer()) a.half.gid_index_a = gid.get<int>();
      const Json rate = p.value("rate_gbps", Json());
      if (rate.is_number()) a.half.rate_gbps = rate.get<double>();
      a.subnet = rail_subnet(p);
      if (auto it = numa.find(a.half.hca_a); it != numa.end()) a.numa = it->second;
      if (!a.half.link_layer.empty()) out.push_back(a);
    }
  }
  // Index order is locality order: by NUMA node (unknown last), then HCA name and port, so the
  // i-th port of each host sits on the same socket where the hosts are built alike.
  std::sort(out.begin(), out.end(), [](const Port& x, const Port& y) {
    const int nx = x.numa < 0 ? INT32_MAX : x.numa, ny = y.numa < 0 ? INT32_MAX : y.numa;
    return std::tie(nx, x.half.hca_a, x.half.port_a) < std::tie(ny, y.half.hca_a, y.half.port_a);
  });
  return out;
}

std::string label(const char* host, const Port& p) {
  return std::string(host) + " " + p.half.hca_a + ":" + std::to_string(p.half.port_a);
}

RcPortPair join(const Port& a, const Port& b, const std::string& rail) {
  RcPortPair p{a.half.hca_a, b.half.hca_a, a.half.port_a, b.half.port_a, a.half.gid_index_a,
               b.half.gid_index_a, a.half.link_layer, std::nullopt, rail};
  if (a.half.rate_gbps && b.half.rate_gbps) p.rate_gbps = std::min(*a.half.rate_gbps, *b.half.rate_gbps);
  return p;
}

// Subnets tell rails apart on this link layer when every port has one and each host's ports sit
// on distinct subnets shared with the other host.
bool subnets_discriminate(const std::vector<Port>& a, const std::vector<Port>& b) {
  std::set<std::string> sa, sb;
  for (const auto& p : a) {
    if (p.subnet.empty()) return false;
    sa.insert(p.subnet);
  }
  for (const auto& p : b) {
    if (p.subnet.empty()) return false;
    sb.insert(p.subnet);
  }
  if (sa.size() < 2 && sb.size() < 2) return false;  // one subnet: it says nothing about rails
  for (const auto& s : sa)
    if (sb.count(s)) return true;
  return false;  // no common subnet at all: the GIDs are not comparable (routed), pair by index
}

}  // namespace

std::string rail_subnet(const Json& port) {
  const std::string ll = text_of(port, "link_layer");
  std::string text;
  if (ll == "InfiniBand") {
    text = gid_at(port, 0);
  } else if (ll == "Ethernet" && port.value("roce_v2_gid_index", Json()).is_number_integer()) {
    text = gid_at(port, port["roce_v2_gid_index"].get<int>());
  }
  if (text.empty()) return "";
  auto gid = verbs::parse_gid(text);
  if (!gid || verbs::is_zero(*gid)) return "";
  if (verbs::is_ipv4_mapped(*gid)) {
    std::string ip = verbs::ipv4_of(*gid);
    return ip.substr(0, ip.rfind('.')) + ".0/24";
  }
  std::string s;
  for (int i = 0; i < 8; ++i) s += hex2((*gid)[static_cast<size_t>(i)]) + ((i % 2 == 1 && i < 7) ? ":" : "");
  return s + "::/64";
}

std::optional<std::string> nccl_env_value(const Json& report, const std::string& name) {
  if (!report.is_object() || !report.contains("nccl_env") || !report["nccl_env"].is_object())
    return std::nullopt;
  for (const auto& v : report["nccl_env"].value("variables", Json::array()))
    if (v.is_object() && v.value("name", Json()) == name && v.value("value", Json()).is_string())
      return v["value"].get<std::string>();
  return std::nullopt;
}

RailPlan plan_rails(const Json& report_a, const Json& report_b) {
  RailPlan plan;
  const auto a_all = active_ports(report_a), b_all = active_ports(report_b);
  std::vector<std::string> link_layers;
  for (const auto& p : a_all)
    if (std::find(link_layers.begin(), link_layers.end(), p.half.link_layer) == link_layers.end())
      link_layers.push_back(p.half.link_layer);
  for (const auto& ll : link_layers) {
    std::vector<Port> a, b;
    for (const auto& p : a_all)
      if (p.half.link_layer == ll) a.push_back(p);
    for (const auto& p : b_all)
      if (p.half.link_layer == ll) b.push_back(p);
    if (b.empty()) continue;
    const size_t before = plan.pairs.size();
    if (subnets_discriminate(a, b)) {
      plan.method = "subnet";
      std::map<std::string, std::pair<std::vector<Port>, std::vector<Port>>> rails;
      for (const auto& p : a) rails[p.subnet].first.push_back(p);
      for (const auto& p : b) rails[p.subnet].second.push_back(p);
      for (const auto& [subnet, sides] : rails) {
        const auto& [ra, rb] = sides;
        const size_t n = std::min(ra.size(), rb.size());
        for (size_t i = 0; i < n; ++i) plan.pairs.push_back(join(ra[i], rb[i], subnet));
        for (size_t i = n; i < ra.size(); ++i)
          plan.unpaired.push_back(label("A", ra[i]) + " (rail " + subnet + "): no port of B left on it");
        for (size_t i = n; i < rb.size(); ++i)
          plan.unpaired.push_back(label("B", rb[i]) + " (rail " + subnet + "): no port of A left on it");
      }
    } else {
      if (plan.method.empty()) plan.method = "index";
      const size_t n = std::min(a.size(), b.size());
      for (size_t i = 0; i < n; ++i) plan.pairs.push_back(join(a[i], b[i], "index " + std::to_string(i)));
      for (size_t i = n; i < a.size(); ++i) plan.unpaired.push_back(label("A", a[i]) + ": no port of B at index " + std::to_string(i));
      for (size_t i = n; i < b.size(); ++i) plan.unpaired.push_back(label("B", b[i]) + ": no port of A at index " + std::to_string(i));
    }
    plan.cross_rail_not_applicable +=
        static_cast<int>(a.size() * b.size()) - static_cast<int>(plan.pairs.size() - before);
  }
  return plan;
}

std::vector<std::string> active_link_layers(const Json& report) {
  std::vector<std::string> out;
  for (const auto& p : active_ports(report)) out.push_back(p.half.link_layer);
  return out;
}

}  // namespace fabkit::pair
