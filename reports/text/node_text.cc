// Text of a node report's facts, before its findings: the RDMA ports, the interfaces with the one
// NCCL would use, the limits that break RDMA, and the GPUs. The figures a cluster engineer checks
// first, so the findings below read against them.
#include <cstdint>

#include "common/human_bytes.h"
#include "reports/text/gpu_active_text.h"
#include "reports/text/table.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {
namespace {

std::string bytes_text(const Json& v) {
  if (v.is_string()) return v.get<std::string>();  // "unlimited"
  // Any JSON number: a report built in this process holds signed or unsigned integers, one read
  // back from a file unsigned ones.
  return v.is_number() && v.get<double>() >= 0 ? human_bytes(static_cast<uint64_t>(v.get<double>()))
                                               : "-";
}

std::string flag(const Json& v) { return v.is_boolean() ? (v.get<bool>() ? "yes" : "no") : "-"; }

std::string number_or_dash(const Json& v) { return v.is_number() ? v.dump() : "-"; }

// The netdev as this namespace sees it: one in another network namespace (a container on a
// shared-RDMA host) is not usable here, and a capture may not say.
std::string netdev_cell(const Json& port) {
  // An EFA port has no net device of its own (the ENA interface is another PCI function).
  if (member(port, "link_layer") == "Unspecified") return "-";
  const std::string place = str(member(port, "netdev_place"), "");
  const std::string name = str(member(port, "netdev"));
  if (place == "other_namespace") return name + " (other netns)";
  if (place == "not_captured" && !member(port, "netdev").is_string()) return "not captured";
  return name;
}

void render_rdma(const Json& rdma, std::ostream& out, const Style& style) {
  const Json& devices = member(rdma, "devices");
  if (!devices.is_array() || devices.empty()) {
    out << "RDMA ports: none (source: " << str(member(rdma, "source")) << ")\n";
    return;
  }
  out << "RDMA ports (source: " << str(member(rdma, "source")) << ")\n";
  Table t({{"port"},
           {"state"},
           {"phys"},
           {"link_layer"},
           {"rate_Gb/s", Align::kRight},
           {"netdev"},
           {"roce_v2_gid", Align::kRight}});
  for (const auto& d : devices)
    for (const auto& p : member(d, "ports")) {
      const std::string state = str(member(p, "state"));
      t.add_row({str(member(d, "name")) + ":" + number_or_dash(member(p, "port")),
                 state == "ACTIVE" ? state : style.bad(state), str(member(p, "phys_state")),
                 str(member(p, "link_layer")), fixed(member(p, "rate_gbps"), 0),
                 netdev_cell(p), number_or_dash(member(p, "roce_v2_gid_index"))});
    }
  t.render(out);
}

void render_interfaces(const Json& net, std::ostream& out) {
  const Json& ifs = member(net, "interfaces");
  if (!ifs.is_array() || ifs.empty()) return;
  const Json& pick = member(net, "nccl_pick");
  const Json& rec = member(net, "recommended");
  out << "\ninterfaces (NCCL would use: " << str(member(pick, "name"), "none")
      << "; fabcheck recommends: " << str(member(rec, "name"), "none") << ")\n";
  Table t({{"name"},
           {"kind"},
           {"up"},
           {"running"},
           {"mtu", Align::kRight},
           {"speed_Mb/s", Align::kRight},
           {"pci"}});
  for (const auto& i : ifs)
    t.add_row({str(member(i, "name")), str(member(i, "kind")), flag(member(i, "up")),
               flag(member(i, "running")), number_or_dash(member(i, "mtu")),
               number_or_dash(member(i, "speed_mbps")), str(member(i, "pci_device"))});
  t.render(out);
}

void render_limits_and_gpus(const Json& limits, const Json& gpus, std::ostream& out) {
  if (limits.is_object()) {
    const Json& ml = member(limits, "memlock_bytes");
    out << "\nlimits: memlock soft " << bytes_text(member(ml, "soft")) << ", hard "
        << bytes_text(member(ml, "hard")) << "; /dev/shm "
        << bytes_text(member(limits, "shm_size_bytes")) << "\n";
  }
  if (!gpus.is_object()) return;
  const Json& devices = member(gpus, "devices");
  out << "GPUs: " << number_or_dash(member(gpus, "count"));
  if (member(gpus, "driver_version").is_string())
    out << " (driver " << str(member(gpus, "driver_version")) << ")";
  else if (member(gpus, "skipped") == true)
    out << " (not queried under --sysroot)";
  else if (member(gpus, "nvml_error").is_string())
    out << " (" << str(member(gpus, "nvml_error")) << ")";
  out << "\n";
  if (!devices.is_array() || devices.empty()) return;
  Table t({{"index", Align::kRight}, {"name"}, {"bus_id"}, {"numa", Align::kRight}, {"memory"}});
  for (const auto& d : devices)
    t.add_row({number_or_dash(member(d, "index")), str(member(d, "name")), str(member(d, "bus_id")),
               number_or_dash(member(d, "numa_node")), bytes_text(member(d, "memory_bytes"))});
  t.render(out);
}

}  // namespace

void render_node_facts(const Report& r, std::ostream& out, const Style& style) {
  const Json* rdma = nullptr;
  const Json* net = nullptr;
  const Json* limits = nullptr;
  const Json* gpus = nullptr;
  const Json* gpu_active = nullptr;
  for (const auto& s : r.sections) {
    if (s.name == "gpu_active") gpu_active = &s.facts;
    if (s.name == "rdma") rdma = &s.facts;
    if (s.name == "net") net = &s.facts;
    if (s.name == "limits") limits = &s.facts;
    if (s.name == "gpus") gpus = &s.facts;
  }
  if (rdma) render_rdma(*rdma, out, style);
  render_efa(r, out, style);
  if (net) render_interfaces(*net, out);
  render_limits_and_gpus(limits ? *limits : Json(), gpus ? *gpus : Json(), out);
  if (gpus) render_gpu_health(*gpus, r.findings, out, style);
  render_pcie_and_kernel_log(r, out, style);
  render_roce_qos(r, out, style);
  render_ib_qos(r, out, style);
  if (gpu_active) render_gpu_active(*gpu_active, out, style);
}

}  // namespace fabkit::reports::text
