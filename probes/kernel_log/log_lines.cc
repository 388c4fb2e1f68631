#include "probes/kernel_log/log_lines.h"

#include <cctype>

#include "topo/pci_bus_id.h"

namespace fabkit::probes {
namespace {

using sv = std::string_view;

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Case-insensitive: the drivers disagree on "Link down" / "Link Down" / "Link DOWN".
bool iequals(sv a, sv b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

bool istarts(sv s, sv prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

bool starts(sv s, sv prefix) { return s.substr(0, prefix.size()) == prefix; }

sv first_line(sv m) { return m.substr(0, m.find('\n')); }

sv trim_right(sv s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The token up to the next blank (or the end).
sv token(sv s) { return s.substr(0, s.find_first_of(" \n")); }

bool bus_chars(sv s) {
  return !s.empty() && s.size() <= 24 &&
         s.find_first_not_of("0123456789abcdefABCDEF:.") == sv::npos;
}

// A name the kernel puts before ": " (a module, an interface, an RDMA device): no blanks, no
// colon, none of the brackets a comm's "[pid]" or a function's "(...)" would bring.
bool name_token(sv s) {
  return !s.empty() && s.size() <= 32 && s.find_first_of(" \t:[]()") == sv::npos;
}

// "link up" followed by the end of the text or a separator: "Link up[4242]: segfault" (a comm of
// "eth0: Link up") is not a link line.
bool word_prefix(sv s, sv prefix) {
  if (!istarts(s, prefix)) return false;
  return s.size() == prefix.size() || s[prefix.size()] == ' ' || s[prefix.size()] == ',';
}

// What follows the device part of a link line: down (exactly the driver's words, to the end) or
// up (the words, then anything: "NIC Link is Up 100 Gbps Full Duplex").
std::optional<LinkLine> link_tail(sv t) {
  t = trim_right(t);
  for (sv w : {sv("link down"), sv("link is down"), sv("nic link is down")})
    if (iequals(t, w)) return LinkLine{true, ""};
  for (sv w : {sv("link up"), sv("link is up"), sv("nic link is up")})
    if (word_prefix(t, w)) return LinkLine{false, ""};
  // Intel's drivers name the interface again: "eno1 NIC Link is Down" (igb, older e1000e).
  if (const size_t sp = t.find(' '); sp != sv::npos && name_token(t.substr(0, sp))) {
    const sv rest = t.substr(sp + 1);
    if (iequals(rest, "nic link is down")) return LinkLine{true, std::string(t.substr(0, sp))};
    if (word_prefix(rest, "nic link is up")) return LinkLine{false, std::string(t.substr(0, sp))};
  }
  // pciehp (drivers/pci/hotplug/pciehp_ctrl.c): "pciehp: Slot(1): Link Down".
  if (istarts(t, "pciehp: slot(")) {
    size_t close = t.find("): ");
    if (close == sv::npos || close > 32) return std::nullopt;
    sv rest = t.substr(close + 3);
    if (iequals(rest, "link down")) return LinkLine{true, ""};
    if (word_prefix(rest, "link up")) return LinkLine{false, ""};
    return std::nullopt;
  }
  // An RDMA port (drivers/infiniband/hw/mlx5): "Port: 1 Link DOWN" / "Link ACTIVE".
  if (istarts(t, "port: ")) {
    size_t at = 6, end = at;
    while (end < t.size() && std::isdigit(static_cast<unsigned char>(t[end]))) ++end;
    if (end == at || !istarts(t.substr(end), " link ")) return std::nullopt;
    sv state = t.substr(end + 6);
    if (iequals(state, "down")) return LinkLine{true, ""};
    if (word_prefix(state, "active") || word_prefix(state, "up")) return LinkLine{false, ""};
    return std::nullopt;
  }
  // bonding (drivers/net/bonding/bond_main.c), before and after 5.x's slave_info().
  for (bool down : {true, false}) {
    const sv words = down ? sv("link status definitely down for interface ")
                          : sv("link status definitely up for interface ");
    if (!istarts(t, words)) continue;
    sv rest = t.substr(words.size());
    sv iface = rest.substr(0, rest.find(','));
    if (!name_token(iface)) return std::nullopt;
    sv after = rest.substr(iface.size());
    if (down && !(after.empty() || iequals(after, ", disabling it"))) return std::nullopt;
    if (!down && !(after.empty() || after.front() == ',')) return std::nullopt;
    return LinkLine{down, std::string(iface)};
  }
  if (istarts(t, "(slave ")) {
    size_t close = t.find("): ");
    sv iface = close == sv::npos ? sv() : t.substr(7, close - 7);
    if (!name_token(iface)) return std::nullopt;
    sv rest = t.substr(close + 3);
    if (istarts(rest, "link status definitely down")) {
      sv after = rest.substr(27);
      if (after.empty() || iequals(after, ", disabling slave"))
        return LinkLine{true, std::string(iface)};
      return std::nullopt;
    }
    if (word_prefix(rest, "link status definitely up")) return LinkLine{false, std::string(iface)};
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> log_bus_id(sv text) {
  if (starts(text, "PCI:")) text.remove_prefix(4);
  if (!bus_chars(text)) return std::nullopt;
  std::string t(text);
  if (auto n = topo::normalize_bus_id(t)) return n;
  // The Xid lines' "0000:18:00" leaves out the function: a GPU is function 0.
  size_t colons = 0;
  for (char c : t) colons += c == ':';
  if (colons == 2 && t.find('.') == std::string::npos) return topo::normalize_bus_id(t + ".0");
  return std::nullopt;
}

std::optional<DevicePrefix> device_prefix(sv m) {
  m = first_line(m);
  DevicePrefix p;
  const size_t sp = m.find(' ');
  if (sp == sv::npos || sp == 0 || sp > 32) return std::nullopt;
  p.driver = m.substr(0, sp);
  if (p.driver.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != sv::npos)
    return std::nullopt;
  sv rest = m.substr(sp + 1);
  sv bus = token(rest);
  rest.remove_prefix(bus.size());
  const bool colon = !bus.empty() && bus.back() == ':';
  if (colon) bus.remove_suffix(1);
  // dev_name of a PCI device is always the full "dddd:bb:dd.f".
  if (!bus_chars(bus) || bus.find('.') == sv::npos) return std::nullopt;
  auto normal = log_bus_id(bus);
  if (!normal) return std::nullopt;
  p.bus = *normal;
  if (!colon) {
    if (rest.empty() || rest.front() != ' ') return std::nullopt;
    rest.remove_prefix(1);
    sv name = token(rest);
    if (name.size() < 2 || name.back() != ':') return std::nullopt;
    rest.remove_prefix(name.size());
    name.remove_suffix(1);
    if (!name_token(name)) return std::nullopt;
    p.name = name;
  }
  if (!rest.empty() && rest.front() != ' ') return std::nullopt;
  if (!rest.empty()) rest.remove_prefix(1);
  p.rest = rest;
  return p;
}

std::optional<XidLine> parse_xid_line(sv m) {
  constexpr sv kXid = "NVRM: Xid (";
  m = first_line(m);
  if (!starts(m, kXid)) return std::nullopt;
  const size_t close = m.find(')', kXid.size());
  if (close == sv::npos) return std::nullopt;
  auto bus = log_bus_id(m.substr(kXid.size(), close - kXid.size()));
  if (!bus || m.substr(close, 3) != "): ") return std::nullopt;
  size_t at = close + 3, end = at;
  while (end < m.size() && std::isdigit(static_cast<unsigned char>(m[end]))) ++end;
  if (end == at || end - at > 4) return std::nullopt;
  if (end < m.size() && m[end] != ',') return std::nullopt;
  XidLine x;
  x.xid = std::stoi(std::string(m.substr(at, end - at)));
  x.bus = *bus;
  if (end < m.size()) {
    sv d = m.substr(end + 1);
    while (!d.empty() && d.front() == ' ') d.remove_prefix(1);
    x.detail = std::string(trim_right(d));
  }
  return x;
}

std::optional<std::string> parse_off_bus_line(sv m) {
  const sv line = first_line(m);
  if (starts(line, "NVRM: GPU at ")) {
    sv rest = line.substr(13);
    sv bus = token(rest);
    if (!starts(rest.substr(bus.size()), " has fallen off the bus")) return std::nullopt;
    return log_bus_id(bus);
  }
  if (starts(line, "NVRM: The NVIDIA GPU ")) {
    sv rest = m.substr(21);
    sv bus = token(rest);
    // The words come on the same line or the record's later ones (each "NVRM: "-prefixed).
    if (rest.find("fallen off the bus", bus.size()) == sv::npos) return std::nullopt;
    return log_bus_id(bus);
  }
  if (starts(line, "NVRM: GPU ")) {
    sv rest = line.substr(10);
    sv bus = token(rest);
    if (bus.size() < 2 || bus.back() != ':') return std::nullopt;
    if (!starts(rest.substr(bus.size()), " GPU has fallen off the bus")) return std::nullopt;
    bus.remove_suffix(1);
    return log_bus_id(bus);
  }
  return std::nullopt;
}

std::optional<LinkLine> parse_link_line(sv m) {
  m = first_line(m);
  if (auto p = device_prefix(m)) {
    auto l = link_tail(p->rest);
    // igb: "igb 0000:01:00.0 eno1: igb: eno1 NIC Link is Down".
    const size_t c = p->rest.find(": ");
    if (!l && c != sv::npos && name_token(p->rest.substr(0, c)))
      l = link_tail(p->rest.substr(c + 2));
    if (l) l->device = p->bus;  // the function, however the driver named its interface
    return l;
  }
  // "<module>: <interface>: " (pr_info's KBUILD_MODNAME, then netdev names) or one of them.
  sv tail = m;
  for (int i = 0; i < 2; ++i) {
    const size_t c = tail.find(": ");
    if (c == sv::npos || !name_token(tail.substr(0, c))) return std::nullopt;
    const sv name = tail.substr(0, c);
    tail.remove_prefix(c + 2);
    if (auto l = link_tail(tail)) {
      if (l->device.empty()) l->device = std::string(name);
      return l;
    }
  }
  return std::nullopt;
}

}  // namespace fabkit::probes
