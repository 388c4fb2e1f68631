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
#include "probes/net/net_facts.h"
#include "probes/net/utf8_text.h"

namespace fabkit::probes {
namespace {

constexpr int kResolveTimeoutMs = 2000;  // a dead DNS server must not hang `fabcheck node`
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
    std::error_code ec;
    auto target = std::filesystem::read_symlink(dir / "device", ec);
    i.pci_device = target.parent_path().filename().string();
  }
  std::string devtype;
  if (auto uevent = read_text(dir / "uevent"); ok(uevent))
    for (const auto& line : split(value(uevent), '\n'))
      if (starts_with(line, "DEVTYPE=")) devtype = trim(line.substr(8));
  bool is_bridge = std::filesystem::exists(dir / "bridge");
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

// getaddrinfo has no timeout of its own; run it on a detached thread and stop waiting after
// kResolveTimeoutMs (the thread finishes on its own; its state is shared, not on our stack).
std::optional<std::vector<std::string>> resolve_bounded(const std::string& host, std::string* err) {
  struct State {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    int rc = 0;
    std::vector<std::string> addrs;
  };
  auto st = std::make_shared<State>();
  std::thread([st, host] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    std::vector<std::string> out;
    for (addrinfo* p = res; rc == 0 && p; p = p->ai_next)
      if (auto a = to_if_address(p->ai_addr, nullptr))
        if (std::find(out.begin(), out.end(), a->address) == out.end()) out.push_back(a->address);
    if (res) freeaddrinfo(res);
    std::lock_guard<std::mutex> g(st->m);
    st->rc = rc;
    st->addrs = std::move(out);
    st->done = true;
    st->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lk(st->m);
  if (!st->cv.wait_for(lk, std::chrono::milliseconds(kResolveTimeoutMs), [&] { return st->done; })) {
    *err = "name resolution of '" + utf8_clean(host) + "' timed out after " +
           std::to_string(kResolveTimeoutMs) + " ms";
    return std::nullopt;
  }
  if (st->rc != 0) {
    *err = "cannot resolve '" + utf8_clean(host) + "': " + gai_strerror(st->rc);
    return std::nullopt;
  }
  return st->addrs;
}

// The kernel's choice of source address towards the peer: connect() on a UDP socket sends
// nothing, it only consults the routing table.
std::optional<std::string> route_source_address(const std::string& peer) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, peer.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(9);
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, peer.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(9);
    len = sizeof *v6;
  } else {
    return std::nullopt;
  }
  int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> out;
  sockaddr_storage local{};
  socklen_t llen = sizeof local;
  if (connect(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) == 0)
    if (auto a = to_if_address(reinterpret_cast<sockaddr*>(&local), nullptr)) out = a->address;
  close(fd);
  return out;
}

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
  for (const auto& name : list_dir(ctx.roots.sys / "class/net"))
    if (std::filesystem::is_directory(ctx.roots.sys / "class/net" / name)) add(name);

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
