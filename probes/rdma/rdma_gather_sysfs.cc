// /sys/class/infiniband/<dev>/... as the kernel's drivers/infiniband/core/sysfs.c writes it.
#include <cerrno>
#include <algorithm>
#include <cstdlib>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "probes/rdma/rdma_facts.h"
#include "verbs/verbs_strings.h"

namespace fabkit::probes {
namespace fs = std::filesystem;
namespace {

SysError parse_error(const fs::path& p, const std::string& text, const std::string& expected) {
  return SysError{"parse", EINVAL, p.string() + ": '" + text + "', expected " + expected};
}

// A coded attribute ("4: ACTIVE"); missing or malformed files become errors: every kernel
// since 2.6 writes state, phys_state, link_layer and rate for every port.
std::optional<int> read_coded(const fs::path& p, std::vector<SysError>& errors) {
  auto t = read_text(p, 4096);
  if (!ok(t)) {
    errors.push_back(error(t));
    return std::nullopt;
  }
  std::string line = trim(value(t));
  auto code = parse_sysfs_coded(line);
  if (!code) errors.push_back(parse_error(p, line, "'<number>: <name>'"));
  return code;
}

std::optional<int> read_lid(const fs::path& p, std::vector<SysError>& errors) {
  if (!path_exists(p)) return std::nullopt;  // absent from partial captures; never guessed
  auto v = read_int(p);  // "0x1a": the kernel prints LIDs in hex
  if (!v) errors.push_back(parse_error(p, read_line(p).value_or(""), "a hex LID like 0x1a"));
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

void read_gids(const fs::path& port_dir, RdmaPort& p, std::vector<SysError>& errors) {
  if (!path_is_directory(port_dir / "gids")) return;
  p.gids_known = true;
  std::vector<verbs::GidEntry> entries;
  for (const auto& name : list_dir(port_dir / "gids")) {
    char* end = nullptr;
    long idx = std::strtol(name.c_str(), &end, 10);
    if (*end) continue;
    auto text = read_line(port_dir / "gids" / name);
    if (!text) continue;
    auto gid = verbs::parse_gid(*text);
    if (!gid) {
      errors.push_back(parse_error(port_dir / "gids" / name, *text, "a GID in IPv6 form"));
      continue;
    }
    if (verbs::is_zero(*gid)) continue;  // unused slot
    RdmaGid g;
    g.index = static_cast<int>(idx);
    g.gid = verbs::format_gid(*gid);
    // "IB/RoCE v1" covers both: the link layer says which one it is.
    if (auto t = read_line(port_dir / "gid_attrs" / "types" / name)) {
      if (*t == "RoCE v2")
        g.type = verbs::GidType::kRoceV2;
      else if (*t == "IB/RoCE v1")
        g.type = p.link_layer == verbs::LinkLayer::kEthernet ? verbs::GidType::kRoceV1
                                                               : verbs::GidType::kIb;
      else
        errors.push_back(parse_error(port_dir / "gid_attrs" / "types" / name, *t,
                                     "'IB/RoCE v1' or 'RoCE v2'"));
    }
    p.gids.push_back(g);  // its netdev: locate_netdevs
    if (g.type) entries.push_back({g.index, *gid, *g.type, g.netdev});
  }
  std::sort(p.gids.begin(), p.gids.end(), [](auto& a, auto& b) { return a.index < b.index; });
  p.roce_v2_gid_index = verbs::preferred_roce_v2_gid(entries);
}

RdmaPort read_port(const fs::path& dev_dir, int port, std::vector<SysError>& errors) {
  fs::path dir = dev_dir / "ports" / std::to_string(port);
  RdmaPort p;
  p.port = port;
  if (auto c = read_coded(dir / "state", errors)) p.state = static_cast<verbs::PortState>(*c);
  if (auto c = read_coded(dir / "phys_state", errors)) p.phys_state = static_cast<verbs::PhysState>(*c);
  if (auto ll = read_line(dir / "link_layer")) {
    p.link_layer = verbs::link_layer_from_name(*ll);
    // The kernel prints "Unknown" for a driver that reports IB_LINK_LAYER_UNSPECIFIED (EFA,
    // drivers/infiniband/core/sysfs.c show_port_link_layer; rdma-core#884 shows it on efa_0);
    // "Unspecified" is how ibv_devinfo names the same value since rdma-core#884.
    if (!p.link_layer && (*ll == "Unknown" || *ll == "Unspecified"))
      p.link_layer = verbs::LinkLayer::kUnspecified;
    if (!p.link_layer)
      errors.push_back(
          parse_error(dir / "link_layer", *ll, "InfiniBand, Ethernet or Unknown (EFA)"));
  } else {
    errors.push_back(SysError{"open", ENOENT, (dir / "link_layer").string()});
  }
  if (auto r = read_line(dir / "rate")) {
    p.rate_text = *r;
    p.rate_gbps = parse_sysfs_rate_gbps(*r);
    if (!p.rate_gbps) errors.push_back(parse_error(dir / "rate", *r, "'<N> Gb/sec (<W>X <SPEED>)'"));
  } else {
    errors.push_back(SysError{"open", ENOENT, (dir / "rate").string()});
  }
  p.lid = read_lid(dir / "lid", errors);
  p.sm_lid = read_lid(dir / "sm_lid", errors);
  read_gids(dir, p, errors);
  return p;
}

}  // namespace

RdmaFacts gather_rdma_sysfs(const fs::path& sys_root, bool live) {
  RdmaFacts f;
  fs::path base = sys_root / "class" / "infiniband";
  if (!path_is_directory(base)) return f;  // no RDMA driver loaded: source stays "none"
  f.source = "sysfs";
  for (const auto& name : list_dir(base)) {
    fs::path dir = base / name;
    RdmaDevice d;
    d.name = name;
    d.fw_ver = read_line(dir / "fw_ver");
    d.node_guid = read_line(dir / "node_guid");
    d.parent = read_line(dir / "parent");
    std::vector<int> ports;
    for (const auto& p : list_dir(dir / "ports")) {
      char* end = nullptr;
      long n = std::strtol(p.c_str(), &end, 10);
      if (!*end && n > 0) ports.push_back(static_cast<int>(n));
    }
    std::sort(ports.begin(), ports.end());
    if (ports.empty()) f.errors.push_back(SysError{"list", ENOENT, (dir / "ports").string()});
    for (int port : ports) d.ports.push_back(read_port(dir, port, f.errors));
    f.devices.push_back(std::move(d));
  }
  read_device_drivers(sys_root, f);
  locate_netdevs(sys_root, live, f);
  return f;
}

void read_device_drivers(const fs::path& sys_root, RdmaFacts& facts) {
  for (auto& d : facts.devices) {
    d.driver = symlink_basename(sys_root / "class" / "infiniband" / d.name / "device" / "driver")
                   .value_or("");
    if (!is_efa(d)) continue;
    for (auto& p : d.ports)
      if (p.link_layer == verbs::LinkLayer::kInfiniBand)
        p.link_layer = verbs::LinkLayer::kUnspecified;
  }
}

bool is_efa(const RdmaDevice& d) { return d.driver == "efa"; }

std::string link_layer_name(verbs::LinkLayer l) {
  return l == verbs::LinkLayer::kUnspecified ? "Unspecified" : verbs::to_string(l);
}

}  // namespace fabkit::probes
