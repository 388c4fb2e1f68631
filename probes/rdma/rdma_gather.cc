// Source selection and the verbs gather. Verbs is preferred when it sees devices (it reads what
// the driver reports, with MTU and exact GID types); sysfs is the fallback and the only source
// under --sysroot.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "probes/rdma/rdma_facts.h"
#include "verbs/verbs_api.h"
#include "verbs/verbs_strings.h"

namespace fabkit::probes {
namespace {

RdmaPort verbs_port(verbs::VerbsApi& api, const std::string& dev, int port, const verbs::PortAttr& a,
                    std::vector<SysError>& errors) {
  RdmaPort p;
  p.port = port;
  p.state = a.state;
  p.phys_state = a.phys_state;
  // UNSPECIFIED comes from drivers that predate the field, all InfiniBand (rdma-core agrees).
  p.link_layer = a.link_layer == verbs::LinkLayer::kEthernet ? verbs::LinkLayer::kEthernet
                                                              : verbs::LinkLayer::kInfiniBand;
  double rate = verbs::rate_gbps(a.active_speed, a.active_width);
  if (rate > 0) p.rate_gbps = rate;
  p.rate_text = verbs::rate_string(a.active_speed, a.active_width);
  if (int mtu = verbs::mtu_bytes(a.active_mtu)) p.active_mtu = mtu;
  if (int mtu = verbs::mtu_bytes(a.max_mtu)) p.max_mtu = mtu;
  p.lid = a.lid;
  p.sm_lid = a.sm_lid;
  p.gids_known = true;
  std::vector<verbs::GidEntry> entries;
  for (int i = 0; i < a.gid_tbl_len; ++i) {
    auto g = api.query_gid(dev, port, i);
    if (!ok(g)) {
      if (error(g).err == ENODATA) continue;  // unused slot
      errors.push_back(error(g));
      p.gids_known = false;
      break;
    }
    const verbs::GidEntry& e = value(g);
    if (verbs::is_zero(e.gid)) continue;
    entries.push_back(e);
    RdmaGid rg{e.index, verbs::format_gid(e.gid), e.type, e.netdev, e.netdev_ifindex, {}};
    if (!e.netdev.empty()) rg.netdev_here = true;  // its ifindex named a netdev here
    p.gids.push_back(rg);
    if (!e.netdev.empty()) {
      if (!p.netdev) p.netdev = e.netdev;
      p.netdev_place = NetdevPlace::kHere;
    } else if (e.netdev_ifindex && p.netdev_place != NetdevPlace::kHere) {
      p.netdev_place = NetdevPlace::kOtherNamespace;
    }
  }
  p.roce_v2_gid_index = verbs::preferred_roce_v2_gid(entries);
  return p;
}

}  // namespace

RdmaFacts gather_rdma_verbs(verbs::VerbsApi& api) {
  RdmaFacts f;
  auto names = api.list_devices();
  if (!ok(names)) {
    f.errors.push_back(error(names));
    return f;
  }
  if (value(names).empty()) return f;
  f.source = "verbs";
  for (const auto& name : value(names)) {
    RdmaDevice d;
    d.name = name;
    auto attr = api.query_device(name);
    if (!ok(attr)) {
      f.errors.push_back(error(attr));
      f.devices.push_back(std::move(d));
      continue;
    }
    d.fw_ver = value(attr).fw_ver;
    d.node_guid = value(attr).node_guid;
    for (int port = 1; port <= value(attr).phys_port_cnt; ++port) {
      auto pa = api.query_port(name, port);
      if (!ok(pa)) {
        f.errors.push_back(error(pa));
        continue;
      }
      d.ports.push_back(verbs_port(api, name, port, value(pa), f.errors));
    }
    f.devices.push_back(std::move(d));
  }
  return f;
}

RdmaFacts gather_rdma(const ProbeContext& ctx) {
  // A capture is one moment: its counters are judged as they are, never re-read.
  const int interval = ctx.roots.live ? ctx.options.rdma_counter_interval_ms : 0;
  std::vector<SysError> verbs_errors;
  if (ctx.verbs) {
    RdmaFacts v = gather_rdma_verbs(*ctx.verbs);
    if (!v.devices.empty()) {
      read_device_drivers(ctx.roots.sys, v);
      locate_netdevs(ctx.roots.sys, ctx.roots.live, v);
      read_port_counters(ctx.roots.sys, v, interval);
      return v;
    }
    verbs_errors = v.errors;
  }
  RdmaFacts s = gather_rdma_sysfs(ctx.roots.sys, ctx.roots.live);
  s.errors.insert(s.errors.begin(), verbs_errors.begin(), verbs_errors.end());
  read_port_counters(ctx.roots.sys, s, interval);
  return s;
}

namespace {

// The numeric files of one counter directory.
std::map<std::string, uint64_t> read_counter_dir(const std::filesystem::path& dir) {
  std::map<std::string, uint64_t> out;
  for (const auto& name : list_dir(dir)) {
    auto v = read_line(dir / name);
    if (!v || v->empty() || v->find_first_not_of("0123456789") != std::string::npos) continue;
    errno = 0;
    const unsigned long long n = std::strtoull(v->c_str(), nullptr, 10);
    if (errno == 0) out[name] = n;  // "lifespan" and other settings are numbers too: harmless
  }
  return out;
}

// counters/ (the PMA's) and hw_counters/ (the driver's) of a port, by file name; `port` (when
// given) learns which directories exist and which names are the driver's 64-bit ones.
std::map<std::string, uint64_t> read_counter_dirs(const std::filesystem::path& port_dir,
                                                  RdmaPort* port = nullptr) {
  std::map<std::string, uint64_t> out;
  if (port) {
    port->counter_dirs.clear();
    port->hw_counter_names.clear();
  }
  for (const char* sub : {"counters", "hw_counters"}) {
    if (port && path_is_directory(port_dir / sub)) port->counter_dirs.push_back(sub);
    for (auto& [name, v] : read_counter_dir(port_dir / sub)) {
      out[name] = v;
      if (port && std::string(sub) == "hw_counters") port->hw_counter_names.insert(name);
    }
  }
  return out;
}

}  // namespace

void read_port_counters(const std::filesystem::path& sys_root, RdmaFacts& facts, int interval_ms) {
  const auto dir = [&](const RdmaDevice& d, const RdmaPort& p) {
    return sys_root / "class/infiniband" / d.name / "ports" / std::to_string(p.port);
  };
  bool any = false;
  for (auto& d : facts.devices) {
    d.counters = read_counter_dir(sys_root / "class/infiniband" / d.name / "hw_counters");
    for (auto& p : d.ports) {
      p.counters = read_counter_dirs(dir(d, p), &p);
      any = any || !p.counters.empty();
    }
  }
  if (!any || interval_ms <= 0) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  facts.counter_interval_ms = interval_ms;
  for (auto& d : facts.devices)
    for (auto& p : d.ports) {
      const auto later = read_counter_dirs(dir(d, p));
      for (const auto& [name, before] : p.counters) {
        auto it = later.find(name);
        // A counter that went down was reset (perfquery -R) in between: no rise to report.
        if (it != later.end() && it->second > before) p.counter_deltas[name] = it->second - before;
      }
      p.counters = later;
    }
}

bool has_active_ports(const RdmaFacts& f) {
  for (const auto& d : f.devices)
    for (const auto& p : d.ports)
      if (p.state == verbs::PortState::kActive) return true;
  return false;
}

size_t device_count(const RdmaFacts& f) { return f.devices.size(); }

std::optional<int> parse_sysfs_coded(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon > 9) return std::nullopt;  // fits an int
  for (size_t i = 0; i < colon; ++i)
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
  if (trim(text.substr(colon + 1)).empty()) return std::nullopt;
  return std::stoi(text.substr(0, colon));
}

std::optional<double> parse_sysfs_rate_gbps(const std::string& text) {
  // "100 Gb/sec (4X EDR)"; the number may be "2.5". Anything else is not a rate line.
  double v = 0;
  char unit[16] = {};
  int used = 0;
  if (sscanf(text.c_str(), "%lf %15s%n", &v, unit, &used) != 2 || std::string(unit) != "Gb/sec" ||
      v < 0)
    return std::nullopt;
  return v;
}

}  // namespace fabkit::probes
