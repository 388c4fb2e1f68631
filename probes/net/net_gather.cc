// Gather: /sys/class/net for every interface (type, MTU, speed, operstate, device link), and,
// on the live system only, getifaddrs for flags and addresses (a --sysroot tree has no
// addresses: we say so rather than describe this machine's).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "common/file_reader.h"
#include "common/net_route.h"
#include "common/root_open.h"
#include "probes/net/net_facts.h"
#include "common/utf8_text.h"

namespace fabkit::probes {
namespace {

constexpr unsigned kIffUp = 0x1;

int prefix_from_mask(const sockaddr* mask) {
  if (!mask) return 0;
  const unsigned char* b = nullptr;
  int n = 0;
  if (mask->sa_family == AF_INET) {
    b = reinterpret_cast<const unsigned char*>(&reinterpret_cast<const sockaddr_in*>(mask)->sin_addr);
    n = 4;
  } else if (mask->sa_family == AF_INET6) {
    b = reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr.s6_addr;
    n = 16;
  }
  int bits = 0;
  for (int i = 0; i < n; ++i) bits += __builtin_popcount(b[i]);
  return bits;
}

std::optional<IfAddress> to_if_address(const sockaddr* sa, const sockaddr* mask) {
  char buf[INET6_ADDRSTRLEN] = {};
  IfAddress a;
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
    a.family = "ipv4";
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
    a.family = "ipv6";
  } else {
    return std::nullopt;
  }
  a.address = buf;
  a.prefix_len = prefix_from_mask(mask);
  return a;
}

void read_sysfs(const SystemRoots& roots, NetInterface& i) {
  auto dir = roots.sys / "class/net" / i.name;
  i.ifindex = static_cast<int>(read_int(dir / "ifindex").value_or(0));
  auto iflink = read_int(dir / "iflink");
  i.operstate = read_line(dir / "operstate").value_or("unknown");
  if (auto mtu = read_int(dir / "mtu")) i.mtu = static_cast<int>(*mtu);
  // Reading `speed` fails with EINVAL on virtual and down links, or reads -1: both are "unknown".
  if (auto sp = read_int(dir / "speed"); sp && *sp > 0) i.speed_mbps = *sp;
  i.arphrd_type = static_cast<int>(read_int(dir / "type").value_or(0));
  i.pci_device = symlink_basename(dir / "device");
  if (i.pci_device && i.pci_device->empty()) {
    // A link written with a trailing slash (captured trees have them) has an empty filename().
    i.pci_device = std::filesystem::path(read_link(dir / "device").value_or(""))
                       .parent_path()
                       .filename()
                       .string();
  }
  std::string devtype;
  if (auto uevent = read_text(dir / "uevent"); ok(uevent))
    for (const auto& line : split(value(uevent), '\n'))
      if (starts_with(line, "DEVTYPE=")) devtype = trim(line.substr(8));
  bool is_bridge = path_exists(dir / "bridge");
  bool has_lower = iflink && *iflink != i.ifindex;
  classify_interface(i, i.pci_device.has_value(), is_bridge, has_lower, devtype);
  // Under --sysroot there is no getifaddrs: derive the flags the kernel would report.
  if (!roots.live) {
    auto flags = read_line(dir / "flags");
    unsigned long f = flags ? std::strtoul(flags->c_str(), nullptr, 16) : 0;
    i.up = (f & kIffUp) != 0;
    // dev_get_flags(): IFF_RUNNING = running and operstate UP or UNKNOWN (netif_oper_up).
    i.running = i.up && (i.operstate == "up" || i.operstate == "unknown");
  }
}

}  // namespace

namespace {

std::optional<PeerFacts> gather_peer(const ProbeContext& ctx, const NetFacts& f) {
  PeerFacts p;
  if (ctx.options.peer) {
    p.given = *ctx.options.peer;
    p.via = "--peer";
  } else if (auto m = ctx.env.get("MASTER_ADDR"); m && !m->empty()) {
    p.given = *m;
    p.via = "MASTER_ADDR";
  } else {
    return std::nullopt;
  }
  std::string err;
  auto host = p.given;
  p.given = utf8_clean(p.given);  // it is echoed into findings and JSON
  if (auto addrs = resolve_bounded(host, &err))
    p.addresses = *addrs;
  else
    p.error = err;
  for (const auto& i : f.interfaces)
    for (const auto& a : i.addresses)
      for (const auto& r : p.addresses)
        if (address_in_subnet(a, r) &&
            std::find(p.on_subnet_of.begin(), p.on_subnet_of.end(), i.name) == p.on_subnet_of.end())
          p.on_subnet_of.push_back(i.name);
  if (ctx.roots.live && !p.addresses.empty())
    if (auto src = route_source_address(p.addresses.front()))
      for (const auto& i : f.interfaces)
        for (const auto& a : i.addresses)
          if (a.address == *src) p.route_interface = i.name;
  return p;
}

}  // namespace

NetFacts gather_net(const ProbeContext& ctx, const NetSettings& settings) {
  NetFacts f;
  f.settings = settings;
  f.addresses_known = ctx.roots.live;
  f.source = ctx.roots.live ? "getifaddrs+sysfs" : "sysfs";
  std::map<std::string, size_t> index;
  auto add = [&](const std::string& name) -> NetInterface& {
    auto it = index.find(name);
    if (it != index.end()) return f.interfaces[it->second];
    index[name] = f.interfaces.size();
    f.interfaces.push_back(NetInterface{});
    f.interfaces.back().name = name;
    return f.interfaces.back();
  };
  f.interfaces_known = ctx.roots.live || path_is_directory(ctx.roots.sys / "class/net");
  for (const auto& name : list_dir(ctx.roots.sys / "class/net"))
    if (path_is_directory(ctx.roots.sys / "class/net" / name)) add(name);

  if (ctx.roots.live) {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) {
      f.errors.push_back({"getifaddrs", errno, "interfaces"});
      f.addresses_known = false;
    }
    int order = 0;
    for (ifaddrs* p = list; p; p = p->ifa_next) {
      NetInterface& i = add(p->ifa_name);
      i.up = (p->ifa_flags & IFF_UP) != 0;
      i.running = (p->ifa_flags & IFF_RUNNING) != 0;
      if (!p->ifa_addr) continue;
      if (auto a = to_if_address(p->ifa_addr, p->ifa_netmask)) {
        if (i.addresses.empty()) i.enum_order = ++order;
        i.addresses.push_back(*a);
      }
    }
    if (list) freeifaddrs(list);
  }
  for (auto& i : f.interfaces) {
    read_sysfs(ctx.roots, i);
    // Without addresses NCCL's scan order is unknown; interface index order stands in.
    if (!f.addresses_known || i.enum_order == 0) i.enum_order = 1000000 + i.ifindex;
  }

  if (settings.socket_ifname && settings.socket_ifname->size() > 1) {
    f.socket_ifname_list = parse_nccl_list(*settings.socket_ifname, kNcclMaxSocketEntries);
    for (const auto& i : f.interfaces)
      if (nccl_list_selects(*f.socket_ifname_list, i.name)) f.socket_ifname_matched.push_back(i.name);
  }
  f.peer = gather_peer(ctx, f);
  f.nccl_pick = nccl_pick(f.interfaces, settings, f.addresses_known);
  f.recommended = recommend_interface(f.interfaces, f.peer, f.addresses_known);
  return f;
}

}  // namespace fabkit::probes
