#include "fabric/agent/local_interfaces.h"

#include <map>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include "common/file_reader.h"

namespace fabkit::agent {
namespace {

int prefix_len(const sockaddr* mask) {
  if (mask == nullptr) return 0;
  uint32_t m = ntohl(reinterpret_cast<const sockaddr_in*>(mask)->sin_addr.s_addr);
  int n = 0;
  while (m & 0x80000000u) {
    ++n;
    m <<= 1;
  }
  return n;
}

}  // namespace

Json local_interfaces(const SystemRoots& roots) {
  std::map<std::string, Json> by_name;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return Json::array();
  for (ifaddrs* p = list; p != nullptr; p = p->ifa_next) {
    if (p->ifa_name == nullptr) continue;
    std::string name = p->ifa_name;
    Json& j = by_name[name];
    if (j.is_null()) {
      auto dir = roots.sys / "class/net" / name;
      auto speed = read_int(dir / "speed");  // -1 or unreadable on virtual links: unknown
      auto mtu = read_int(dir / "mtu");
      j = {{"name", name},
           {"up", (p->ifa_flags & IFF_UP) != 0},
           {"running", (p->ifa_flags & IFF_RUNNING) != 0},
           {"mtu", mtu ? Json(*mtu) : Json()},
           {"speed_mbps", speed && *speed > 0 ? Json(*speed) : Json()},
           {"kind", (p->ifa_flags & IFF_LOOPBACK) ? "loopback" : "other"},
           {"addresses", Json::array()}};
    }
    if (p->ifa_addr != nullptr && p->ifa_addr->sa_family == AF_INET) {
      char buf[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(p->ifa_addr)->sin_addr, buf, sizeof buf);
      j["addresses"].push_back(
          {{"family", "ipv4"}, {"address", buf}, {"prefix_len", prefix_len(p->ifa_netmask)}});
    }
  }
  ::freeifaddrs(list);
  Json out = Json::array();
  for (auto& [name, j] : by_name) out.push_back(j);
  return out;
}

Json interfaces_for_report(const Json& node_report, const SystemRoots& roots) {
  auto net = node_report.find("net");
  if (net != node_report.end() && net->is_object() && net->contains("interfaces") &&
      (*net)["interfaces"].is_array())
    return {{"source", "net"}, {"interfaces", (*net)["interfaces"]}};
  return {{"source", "getifaddrs"}, {"interfaces", local_interfaces(roots)}};
}

}  // namespace fabkit::agent
