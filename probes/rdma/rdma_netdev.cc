// Which network namespace each port's net device is in (rdma_facts.h: NetdevPlace).
//
// What the kernel tells a process in another namespace than the netdev's (drivers/infiniband/core):
//  - sysfs ports/P/gid_attrs/ndevs/N (sysfs.c print_ndev) prints the GID's netdev name with no
//    namespace check, and fails with EINVAL for a slot without a netdev;
//  - verbs' GID query (uverbs QUERY_GID_ENTRY) gives the netdev's ifindex, which is only
//    meaningful in the netdev's own namespace;
//  - rdma netlink (`rdma link show`, nldev.c fill_port_info) leaves the netdev out unless it is
//    in the caller's namespace: "the kernel refuses to tell";
//  - device/net/ is a class directory, which sysfs filters by the namespace it was mounted in;
//  - rxe and siw have `parent`, the netdev they were created on, by name.
// A --sysroot capture is judged by its own class/net; without one it cannot say.
#include <net/if.h>

#include <cerrno>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "probes/rdma/rdma_facts.h"

namespace fabkit::probes {
namespace fs = std::filesystem;
namespace {

// What the kernel accepts as an interface name (net/core/dev.c dev_valid_name): a capture's text
// that is not one is no evidence, and never becomes a path under class/net.
bool valid_ifname(const std::string& n) {
  if (n.empty() || n.size() >= IF_NAMESIZE || n == "." || n == "..") return false;
  for (char c : n)
    if (c == '/' || c == ':' || c == ' ' || c == '\t' || c == '\n') return false;
  return true;
}

class Namespace {
 public:
  Namespace(const fs::path& sys, bool live)
      : net_(sys / "class" / "net"), live_(live), captured_(live || path_is_directory(net_)) {}

  // Whether this namespace has netdev `name`; with the kernel's `ifindex` (non-zero) it must be
  // that device, not another of the same name. nullopt: a capture without class/net.
  std::optional<bool> has(const std::string& name, uint32_t ifindex) const {
    if (live_) {
      // The process's own namespace, whatever /sys was mounted in (nsenter --net keeps the old
      // sysfs mount).
      const unsigned idx = if_nametoindex(name.c_str());
      return idx != 0 && (ifindex == 0 || idx == ifindex);
    }
    if (!captured_) return std::nullopt;
    const fs::path dir = net_ / name;
    if (!path_exists(dir)) return false;
    if (ifindex == 0) return true;
    auto v = read_int(dir / "ifindex");
    return !v || *v == static_cast<int64_t>(ifindex);
  }

 private:
  fs::path net_;
  bool live_;
  bool captured_;
};

// device/net/* of a port: the one entry, or the one whose dev_port matches (mlx4 exposes both
// ports' netdevs on one PCI function).
std::optional<std::string> device_net(const fs::path& dev_dir, int port) {
  auto nets = list_dir(dev_dir / "device" / "net");
  if (nets.size() == 1) return nets[0];
  for (const auto& n : nets) {
    auto dp = read_int(dev_dir / "device" / "net" / n / "dev_port");
    if (dp && *dp == port - 1) return n;
  }
  return std::nullopt;
}

void locate_port(const fs::path& dev_dir, const RdmaDevice& d, RdmaPort& p, const Namespace& ns,
                 bool live, std::vector<SysError>& errors) {
  const fs::path ndevs = dev_dir / "ports" / std::to_string(p.port) / "gid_attrs" / "ndevs";
  std::optional<std::string> here, elsewhere, unknown;
  bool nameless_elsewhere = false;  // verbs gave an ifindex that no name here or in sysfs matches
  auto note = [&](const std::string& name, std::optional<bool> is_here, bool preferred) {
    auto& slot = !is_here ? unknown : *is_here ? here : elsewhere;
    if (!slot || preferred) slot = name;
  };
  for (auto& g : p.gids) {
    // The kernel's name wins over verbs' lookup here: an ifindex of another namespace can name
    // an unrelated device of ours.
    if (auto n = read_line(ndevs / std::to_string(g.index)); n && !n->empty()) {
      if (valid_ifname(*n)) {
        g.netdev = *n;
      } else {
        g.netdev.clear();
        errors.push_back(SysError{"parse", EINVAL,
                                  (ndevs / std::to_string(g.index)).string() + ": '" + *n +
                                      "', expected a network interface name"});
      }
    }
    if (g.netdev.empty()) {
      if (g.netdev_ifindex) {
        g.netdev_here = false;
        nameless_elsewhere = true;
      }
      continue;
    }
    g.netdev_here = ns.has(g.netdev, g.netdev_ifindex);
    note(g.netdev, g.netdev_here, p.roce_v2_gid_index == g.index);
  }
  // No GID names one (an IB port, an empty GID table): the device's own word, then device/net.
  if (!here && !elsewhere && !unknown && !nameless_elsewhere) {
    if (d.parent && valid_ifname(*d.parent))
      note(*d.parent, ns.has(*d.parent, 0), false);
    else if (auto n = device_net(dev_dir, p.port); n && valid_ifname(*n))
      // sysfs lists under device/net only the netdevs of the namespace it was mounted in, so a
      // capture's entry was in the capturing namespace; live, this process's namespace decides.
      note(*n, live ? ns.has(*n, 0) : std::optional<bool>(true), false);
  }
  if (here) {
    p.netdev = here;
    p.netdev_place = NetdevPlace::kHere;
  } else if (elsewhere || nameless_elsewhere) {
    p.netdev = elsewhere;
    p.netdev_place = NetdevPlace::kOtherNamespace;
  } else if (unknown) {
    p.netdev = unknown;
    p.netdev_place = NetdevPlace::kNotCaptured;
  } else {
    p.netdev.reset();
    p.netdev_place = live ? NetdevPlace::kNone : NetdevPlace::kNotCaptured;
  }
  // A port with GIDs of several netdevs (a container's macvlan on the host's PF): NCCL and the RC
  // test can only use the ones whose netdev is here.
  if (here && elsewhere) {
    std::vector<verbs::GidEntry> mine;
    for (const auto& g : p.gids)
      if (g.type && g.netdev_here == true)
        if (auto raw = verbs::parse_gid(g.gid)) mine.push_back({g.index, *raw, *g.type, g.netdev});
    if (auto i = verbs::preferred_roce_v2_gid(mine)) p.roce_v2_gid_index = i;
  }
}

}  // namespace

std::string to_string(NetdevPlace place) {
  switch (place) {
    case NetdevPlace::kHere:
      return "here";
    case NetdevPlace::kOtherNamespace:
      return "other_namespace";
    case NetdevPlace::kNotCaptured:
      return "not_captured";
    case NetdevPlace::kNone:
      return "none";
  }
  return "none";
}

void locate_netdevs(const fs::path& sys_root, bool live, RdmaFacts& facts) {
  const Namespace ns(sys_root, live);
  for (auto& d : facts.devices) {
    const fs::path dev_dir = sys_root / "class" / "infiniband" / d.name;
    if (!d.parent) d.parent = read_line(dev_dir / "parent");
    for (auto& p : d.ports) locate_port(dev_dir, d, p, ns, live, facts.errors);
  }
}

}  // namespace fabkit::probes
