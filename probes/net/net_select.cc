// Pure selection logic: which interface NCCL takes, which one we recommend.
#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "common/file_reader.h"
#include "probes/net/net_facts.h"

namespace fabkit::probes {
namespace {

bool usable_by_nccl(const NetInterface& i, const std::optional<std::string>& family,
                    bool addresses_known) {
  // Current NCCL (os/linux.cc ncclOsFindInterfaces) skips interfaces without IFF_RUNNING; older
  // releases did not, so a down interface with an address could be bound there.
  if (!i.running) return false;
  if (!addresses_known) return true;
  for (const auto& a : i.addresses) {
    if (a.family == "ipv6" && a.address == "::1") continue;  // NCCL skips IPv6 loopback
    if (family == std::string("AF_INET") && a.family != "ipv4") continue;
    if (family == std::string("AF_INET6") && a.family != "ipv6") continue;
    return true;
  }
  return false;
}

std::vector<const NetInterface*> in_scan_order(const std::vector<NetInterface>& ifs) {
  std::vector<const NetInterface*> v;
  for (const auto& i : ifs) v.push_back(&i);
  std::stable_sort(v.begin(), v.end(), [](const NetInterface* a, const NetInterface* b) {
    return a->enum_order < b->enum_order;
  });
  return v;
}

std::optional<std::string> comm_id_host(const std::string& comm_id) {
  // "ip:port" or "[ipv6]:port": NCCL takes the host part up to ':' (or the bracket).
  if (!comm_id.empty() && comm_id[0] == '[') {
    auto close = comm_id.find(']');
    if (close == std::string::npos) return std::nullopt;
    return comm_id.substr(1, close - 1);
  }
  return comm_id.substr(0, comm_id.find(':'));
}

int rank_for_recommendation(const NetInterface& i) {
  if (i.kind == "physical" || i.kind == "ipoib") return 0;
  if (!i.is_virtual) return 1;  // bond, vlan over physical links
  if (i.kind == "veth" || i.kind == "other") return 2;  // a container's eth0 is a veth
  return 3;                                             // bridges, docker, virbr
}

}  // namespace

bool address_in_subnet(const IfAddress& local, const std::string& remote) {
  unsigned char a[16], b[16];
  int af = local.family == "ipv4" ? AF_INET : AF_INET6;
  if (inet_pton(af, local.address.c_str(), a) != 1) return false;
  if (inet_pton(af, remote.c_str(), b) != 1) return false;
  int bytes = af == AF_INET ? 4 : 16;
  int bits = std::clamp(local.prefix_len, 0, bytes * 8);
  for (int i = 0; i < bytes; ++i) {
    int take = std::clamp(bits - i * 8, 0, 8);
    unsigned char mask = take == 0 ? 0 : static_cast<unsigned char>(0xff << (8 - take));
    if ((a[i] & mask) != (b[i] & mask)) return false;
  }
  return true;
}

void classify_interface(NetInterface& i, bool has_device, bool is_bridge, bool has_lower_link,
                        const std::string& devtype) {
  constexpr int kArphrdInfiniband = 32, kArphrdLoopback = 772;
  i.subtype.clear();
  if (i.arphrd_type == kArphrdLoopback || i.name == "lo") {
    i.kind = "loopback";
  } else if (i.arphrd_type == kArphrdInfiniband) {
    i.kind = "ipoib";  // a child (ib0.8001) has no device link but still rides the HCA
  } else if (starts_with(i.name, "docker")) {
    i.kind = "docker";
  } else if (starts_with(i.name, "virbr")) {
    i.kind = "virbr";
  } else if (is_bridge || devtype == "bridge") {
    i.kind = "bridge";
  } else if (has_device) {
    i.kind = "physical";
  } else if (starts_with(i.name, "veth") || (has_lower_link && devtype.empty())) {
    // A veth reports its peer's ifindex in iflink; no DEVTYPE in uevent.
    i.kind = "veth";
  } else {
    i.kind = "other";
    i.subtype = devtype.empty() ? "virtual" : devtype;
  }
  // bond and vlan devices carry physical links; they are legitimate NCCL interfaces.
  bool stacked_physical = i.kind == "other" && (devtype == "bond" || devtype == "vlan");
  i.is_virtual = !(i.kind == "physical" || i.kind == "ipoib" || stacked_physical);
}

NcclPick nccl_pick(const std::vector<NetInterface>& ifs, const NetSettings& s,
                   bool addresses_known) {
  NcclPick p;
  auto ordered = in_scan_order(ifs);
  auto run = [&](const std::string& list_text, const std::string& step) {
    NcclList l = parse_nccl_list(list_text, kNcclMaxSocketEntries);
    for (const NetInterface* i : ordered)
      if (usable_by_nccl(*i, s.socket_family, addresses_known) && nccl_list_selects(l, i->name))
        p.all.push_back(i->name);
    if (p.all.size() > kNcclMaxSocketEntries) p.all.resize(kNcclMaxSocketEntries);
    if (!p.all.empty()) {
      p.name = p.all.front();
      p.step = step;
    }
    return !p.all.empty();
  };

  if (s.socket_ifname && s.socket_ifname->size() > 1) {
    if (run(*s.socket_ifname, "NCCL_SOCKET_IFNAME"))
      p.reason = "NCCL_SOCKET_IFNAME=" + *s.socket_ifname + " (from " + s.socket_ifname_source +
                 ") selects " + *p.name + " first";
    else
      p.reason = "NCCL_SOCKET_IFNAME=" + *s.socket_ifname + " (from " + s.socket_ifname_source +
                 ") selects no running interface with an address: NCCL fails with \"no socket "
                 "interface found\"";
    return p;
  }
  std::string prefix = s.socket_ifname ? "NCCL_SOCKET_IFNAME='" + *s.socket_ifname +
                                             "' is one character, which NCCL ignores; "
                                       : "";
  if (run("ib", "ib")) {
    p.reason = prefix + "NCCL takes IPoIB interfaces (ib*) first: " + *p.name;
    return p;
  }
  if (s.comm_id && s.comm_id->size() > 1) {
    auto host = comm_id_host(*s.comm_id);
    for (const NetInterface* i : ordered) {
      if (p.name) break;
      for (const auto& a : i->addresses)
        if (host && address_in_subnet(a, *host)) {
          p.name = i->name;
          p.all = {i->name};
          p.step = "NCCL_COMM_ID subnet";
          p.reason = prefix + "no ib* interface; " + i->name + " holds NCCL_COMM_ID's subnet (" +
                     *host + ")";
          break;
        }
    }
    if (p.name) return p;
  }
  const char* steps[][2] = {{"^docker,lo,virbr", "anything but docker*/lo*/virbr*"},
                            {"docker", "only docker* remain"},
                            {"lo", "only lo* remain"},
                            {"virbr", "only virbr* remain"}};
  for (auto& st : steps) {
    if (run(st[0], st[0])) {
      p.reason = prefix + "no ib* interface" +
                 (s.comm_id ? std::string(" and none on NCCL_COMM_ID's subnet") : "") + "; " +
                 st[1] + ": NCCL takes " + *p.name + ", the first in getifaddrs order";
      return p;
    }
  }
  p.reason = prefix + "no running interface with an address: NCCL finds no socket interface";
  return p;
}

Recommendation recommend_interface(const std::vector<NetInterface>& ifs,
                                   const std::optional<PeerFacts>& peer, bool addresses_known) {
  std::vector<const NetInterface*> cands;
  for (const NetInterface* i : in_scan_order(ifs)) {
    if (!i->up || !i->running || i->kind == "loopback") continue;
    bool has_addr = false;
    for (const auto& a : i->addresses)
      has_addr = has_addr || (a.address != "::1" && !starts_with(a.address, "fe80:"));
    if (addresses_known && !has_addr) continue;
    cands.push_back(i);
  }
  std::stable_sort(cands.begin(), cands.end(), [](const NetInterface* a, const NetInterface* b) {
    int ra = rank_for_recommendation(*a), rb = rank_for_recommendation(*b);
    if (ra != rb) return ra < rb;
    return a->speed_mbps.value_or(0) > b->speed_mbps.value_or(0);
  });
  Recommendation r;
  if (cands.empty()) {
    r.reason = "no interface is up, running, non-loopback and addressed";
    return r;
  }
  if (peer && !peer->addresses.empty()) {
    for (const NetInterface* i : cands)
      if (std::find(peer->on_subnet_of.begin(), peer->on_subnet_of.end(), i->name) !=
          peer->on_subnet_of.end()) {
        r.name = i->name;
        r.reason = i->name + " is up and running and holds the subnet of the peer " +
                   peer->given + " (" + peer->via + ")";
        return r;
      }
    if (peer->route_interface)
      for (const NetInterface* i : cands)
        if (i->name == *peer->route_interface) {
          r.name = i->name;
          r.reason = "the peer " + peer->given + " is on no local subnet; the kernel routes to " +
                     "it through " + i->name;
          return r;
        }
  }
  const NetInterface* best = cands.front();
  r.name = best->name;
  r.reason = best->name + " is the fastest up, running, addressed " +
             (best->is_virtual ? std::string("interface (virtual: ") + best->kind + ")"
                               : std::string("non-virtual interface")) +
             (peer ? "; no local interface holds the peer's subnet"
                   : "; give --peer HOST (or set MASTER_ADDR) to choose by subnet") +
             (addresses_known ? "" : "; addresses unknown under --sysroot");
  return r;
}

}  // namespace fabkit::probes
