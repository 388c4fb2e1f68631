// Text of a node report's facts, before its findings: the RDMA ports, the interfaces with the one
// NCCL would use, the limits that break RDMA, and the GPUs. The figures a cluster engineer checks
// first, so the findings below read against them.
#include <cstdint>

#include "reports/text/table.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {
namespace {

std::string bytes_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();  // "unlimited"
  if (!v.is_number()) return "-";
  const double b = v.get<double>();
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double x = b;
  while (x >= 1024 && u < 4) {
    x /= 1024;
    ++u;
  }
  return fixed(Json(x), x == static_cast<int64_t>(x) ? 0 : 1) + " " + units[u];
}

std::string flag(const Json& v) { return v.is_boolean() ? (v.get<bool>() ? "yes" : "no") : "-"; }

std::string number_or_dash(const Json& v) { return v.is_number() ? v.dump() : "-"; }

void render_rdma(const Json& rdma, std::ostream& out, const Style& style) {
  const Json& devices = get(rdma, "devices");
  if (!devices.is_array() || devices.empty()) {
    out << "RDMA ports: none (source: " << str(get(rdma, "source")) << ")\n";
    return;
  }
  out << "RDMA ports (source: " << str(get(rdma, "source")) << ")\n";
  Table t({{"port"},
           {"state"},
           {"phys"},
           {"link_layer"},
           {"rate_Gb/s", Align::kRight},
           {"netdev"},
           {"roce_v2_gid", Align::kRight}});
  for (const auto& d : devices)
    for (const auto& p : get(d, "ports")) {
      const std::string state = str(get(p, "state"));
      t.add_row({str(get(d, "name")) + ":" + number_or_dash(get(p, "port")),
                 state == "ACTIVE" ? state : style.bad(state), str(get(p, "phys_state")),
                 str(get(p, "link_layer")), fixed(get(p, "rate_gbps"), 0), str(get(p, "netdev")),
                 number_or_dash(get(p, "roce_v2_gid_index"))});
    }
  t.render(out);
}

void render_interfaces(const Json& net, std::ostream& out) {
  const Json& ifs = get(net, "interfaces");
  if (!ifs.is_array() || ifs.empty()) return;
  const Json& pick = get(net, "nccl_pick");
  const Json& rec = get(net, "recommended");
  out << "\ninterfaces (NCCL would use: " << str(get(pick, "name"), "none")
      << "; fabcheck recommends: " << str(get(rec, "name"), "none") << ")\n";
  Table t({{"name"},
           {"kind"},
           {"up"},
           {"running"},
           {"mtu", Align::kRight},
           {"speed_Mb/s", Align::kRight},
           {"pci"}});
  for (const auto& i : ifs)
    t.add_row({str(get(i, "name")), str(get(i, "kind")), flag(get(i, "up")),
               flag(get(i, "running")), number_or_dash(get(i, "mtu")),
               number_or_dash(get(i, "speed_mbps")), str(get(i, "pci_device"))});
  t.render(out);
}

void render_limits_and_gpus(const Json& limits, const Json& gpus, std::ostream& out) {
  if (limits.is_object()) {
    const Json& ml = get(limits, "memlock_bytes");
    out << "\nlimits: memlock soft " << bytes_text(get(ml, "soft")) << ", hard "
        << bytes_text(get(ml, "hard")) << "; /dev/shm " << bytes_text(get(limits, "shm_size_bytes"))
        << "\n";
  }
  if (!gpus.is_object()) return;
  const Json& devices = get(gpus, "devices");
  out << "GPUs: " << number_or_dash(get(gpus, "count"));
  if (get(gpus, "driver_version").is_string())
    out << " (driver " << str(get(gpus, "driver_version")) << ")";
  else if (get(gpus, "skipped") == true)
    out << " (not queried under --sysroot)";
  else if (get(gpus, "nvml_error").is_string())
    out << " (" << str(get(gpus, "nvml_error")) << ")";
  out << "\n";
  if (!devices.is_array() || devices.empty()) return;
  Table t({{"index", Align::kRight}, {"name"}, {"bus_id"}, {"numa", Align::kRight}, {"memory"}});
  for (const auto& d : devices)
    t.add_row({number_or_dash(get(d, "index")), str(get(d, "name")), str(get(d, "bus_id")),
               number_or_dash(get(d, "numa_node")), bytes_text(get(d, "memory_bytes"))});
  t.render(out);
}

}  // namespace

void render_node_facts(const Report& r, std::ostream& out, const Style& style) {
  const Json* rdma = nullptr;
  const Json* net = nullptr;
  const Json* limits = nullptr;
  const Json* gpus = nullptr;
  for (const auto& s : r.sections) {
    if (s.name == "rdma") rdma = &s.facts;
    if (s.name == "net") net = &s.facts;
    if (s.name == "limits") limits = &s.facts;
    if (s.name == "gpus") gpus = &s.facts;
  }
  if (rdma) render_rdma(*rdma, out, style);
  if (net) render_interfaces(*net, out);
  render_limits_and_gpus(limits ? *limits : Json(), gpus ? *gpus : Json(), out);
}

}  // namespace fabkit::reports::text
