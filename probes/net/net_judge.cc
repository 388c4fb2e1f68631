#include <algorithm>
#include <map>
#include <set>

#include "probes/net/net_facts.h"

namespace fabkit::probes {
namespace {

const NetInterface* find_if(const NetFacts& f, const std::string& name) {
  for (const auto& i : f.interfaces)
    if (i.name == name) return &i;
  return nullptr;
}

std::string pin_fix(const std::string& name) {
  return "export NCCL_SOCKET_IFNAME==" + name + " GLOO_SOCKET_IFNAME=" + name +
         "  (the leading '=' makes NCCL match the exact name, not a prefix)";
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

void judge_socket_ifname(const NetFacts& f, std::vector<Finding>& out) {
  const auto& s = f.settings;
  if (!s.socket_ifname) return;
  const std::string subject = "NCCL_SOCKET_IFNAME";
  const std::string& v = *s.socket_ifname;
  if (v.size() <= 1) {
    out.push_back(warn("net.ifname_ignored", subject,
                       "NCCL_SOCKET_IFNAME='" + v + "' (from " + s.socket_ifname_source +
                           ") is at most one character; NCCL ignores such a value and picks an "
                           "interface itself",
                       f.recommended.name ? pin_fix(*f.recommended.name)
                                          : "unset NCCL_SOCKET_IFNAME or name an interface"));
    return;
  }
  const NcclList& l = *f.socket_ifname_list;
  for (const auto& issue : l.issues)
    out.push_back(warn("net.ifname_grammar", subject, issue,
                       "write the list as NCCL reads it: 'eth0,eth1' (prefixes), '=eth0' (exact), "
                       "'^docker,lo' (exclude), '^=docker0' (exclude exact)"));
  std::vector<std::string> names;
  for (const auto& i : f.interfaces) names.push_back(i.name);
  for (const auto& a : nccl_list_ambiguities(l, names))
    if (a.names_one_device)
      out.push_back(warn("net.ifname_ambiguous", subject,
                         "entry '" + a.entry + "' is a prefix and matches " + join(a.matched) +
                             ", not only " + a.entry,
                         "export NCCL_SOCKET_IFNAME==" + a.entry));
  if (f.socket_ifname_matched.empty()) {
    out.push_back(fail("net.ifname_matches_nothing", subject,
                       "NCCL_SOCKET_IFNAME=" + v + " (from " + s.socket_ifname_source +
                           ") matches no interface on this node; NCCL fails at init with \"no "
                           "socket interface found\" (or \"Bootstrap : no socket interface "
                           "found\")",
                       f.recommended.name ? pin_fix(*f.recommended.name)
                                          : "set NCCL_SOCKET_IFNAME to an existing interface"));
    return;
  }
  bool any_good = false;
  std::vector<std::string> states;
  for (const auto& n : f.socket_ifname_matched) {
    const NetInterface* i = find_if(f, n);
    bool good = i->running && i->kind != "loopback" &&
                (!f.addresses_known || !i->addresses.empty());
    any_good = any_good || (good && !i->is_virtual) || (good && i->kind == "veth");
    states.push_back(n + " (" + (i->running ? "running" : "not running") + ", " + i->kind +
                     (f.addresses_known && i->addresses.empty() ? ", no address" : "") + ")");
  }
  if (!any_good) {
    bool none_usable = !f.nccl_pick.name;
    std::string msg = "NCCL_SOCKET_IFNAME=" + v + " matches only " + join(states) +
                      (none_usable ? "; NCCL finds no usable socket interface and fails at init"
                                   : "; cross-node traffic cannot use loopback or a host-only "
                                     "bridge");
    std::string fix = f.recommended.name ? pin_fix(*f.recommended.name)
                                         : "bring the interface up: ip link set DEV up";
    out.push_back(none_usable ? fail("net.ifname_unusable", subject, msg, fix)
                              : warn("net.ifname_unusable", subject, msg, fix));
  }
}

void judge_mtu(const NetFacts& f, std::vector<Finding>& out) {
  // NET/Socket stripes one connection across every interface it selected: a 1500-byte member
  // next to 9000-byte ones caps the stripe, and a mismatch with the peer drops jumbo frames.
  std::map<int, std::vector<std::string>> by_mtu;
  const std::vector<std::string>& set = f.nccl_pick.all;
  for (const auto& n : set) {
    const NetInterface* i = find_if(f, n);
    if (i && i->mtu && i->kind != "loopback") by_mtu[*i->mtu].push_back(n);
  }
  if (by_mtu.size() > 1) {
    std::string desc;
    for (const auto& [mtu, names] : by_mtu)
      desc += (desc.empty() ? "" : "; ") + std::string("MTU ") + std::to_string(mtu) + ": " +
              join(names);
    out.push_back(warn("net.mtu_mismatch", "NCCL socket interfaces",
                       "the interfaces NCCL would use differ in MTU (" + desc +
                           "); every node and switch port on the path must agree",
                       "ip link set DEV mtu " + std::to_string(by_mtu.rbegin()->first) +
                           " on the others, or pin one interface: " +
                           (f.recommended.name ? pin_fix(*f.recommended.name) : "")));
  }
}

}  // namespace

std::vector<Finding> judge_net(const NetFacts& f) {
  std::vector<Finding> out;
  for (const auto& e : f.errors)
    out.push_back(warn("net.read_failed", e.object, "could not list interfaces: " + e.to_string(),
                       "run fabcheck where getifaddrs works (not under seccomp filters)"));
  if (!f.interfaces_known) {
    // A missing source is unknown, not a failure: every judgement below needs the interfaces.
    out.push_back(info("net.interfaces_unknown", "interfaces",
                       "the tree has no sys/class/net, so nothing is known about this node's "
                       "interfaces (NCCL's pick, the recommendation and MTUs are not judged)",
                       "capture /sys/class/net too (cp -a of the directory with its links' targets, "
                       "or fabcheck node on the node itself)"));
    return out;
  }
  if (!f.addresses_known)
    out.push_back(info("net.addresses_unknown", "interfaces",
                       "read from sysfs only (--sysroot): IP addresses are not part of a sysfs "
                       "tree, so NCCL's pick and the recommendation assume every running "
                       "interface has an address"));

  if (f.peer && f.peer->error)
    out.push_back(warn("net.peer_unresolved", f.peer->given,
                       f.peer->error.value() + " (" + f.peer->via + ")",
                       "give the peer as an IP address, or fix /etc/hosts or DNS"));
  else if (f.peer && f.addresses_known && f.peer->on_subnet_of.empty())
    out.push_back(info("net.peer_not_local",
                       f.peer->given,
                       "the peer " + f.peer->given + " (" + join(f.peer->addresses) +
                           ") is on no local subnet; traffic is routed" +
                           (f.peer->route_interface ? " through " + *f.peer->route_interface
                                                    : std::string(" (no route found)")) +
                           ", and NCCL_COMM_ID subnet matching will not help",
                       "check that the nodes share the fabric subnet: ip -br addr"));

  judge_socket_ifname(f, out);

  if (!f.recommended.name) {
    out.push_back(fail("net.no_usable_interface", "interfaces",
                       "no interface is up, running, non-loopback and addressed: NCCL can only "
                       "bootstrap over loopback and multi-node jobs cannot start",
                       "bring the fabric interface up and give it an address: ip link set DEV up; "
                       "ip addr add ADDR/LEN dev DEV"));
  } else if (f.nccl_pick.name && *f.nccl_pick.name != *f.recommended.name) {
    out.push_back(warn("net.nccl_pick_differs", *f.nccl_pick.name,
                       "NCCL would bind " + *f.nccl_pick.name + " (" + f.nccl_pick.reason +
                           "), but the interface to use is " + *f.recommended.name + " (" +
                           f.recommended.reason + ")",
                       pin_fix(*f.recommended.name)));
  }
  if (f.settings.gloo_socket_ifname) {
    bool exists = false;
    for (const auto& i : f.interfaces) exists = exists || i.name == *f.settings.gloo_socket_ifname;
    if (!exists)
      out.push_back(fail("net.gloo_ifname_missing", "GLOO_SOCKET_IFNAME",
                         "GLOO_SOCKET_IFNAME=" + *f.settings.gloo_socket_ifname +
                             " names no interface on this node; Gloo process groups fail to "
                             "start",
                         f.recommended.name ? pin_fix(*f.recommended.name)
                                            : "set GLOO_SOCKET_IFNAME to an existing interface"));
  }
  judge_mtu(f, out);
  return out;
}

}  // namespace fabkit::probes
