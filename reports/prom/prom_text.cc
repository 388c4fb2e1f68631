#include "reports/prom/prom_text.h"

#include "reports/prom/prom_fields.h"
#include "reports/prom/prom_gpu_active.h"

#include <map>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace fabkit::reports::prom {
namespace {

// A limit is a byte count or the string "unlimited" (docs/json/limits.md); +Inf says the latter in
// a form PromQL compares correctly (memlock < 1e9 is false for unlimited).
std::optional<double> limit_value(const Json& v, const std::string& where) {
  if (v.is_null()) return std::nullopt;
  if (v.is_number()) return v.get<double>();
  if (v.is_string() && v.get<std::string>() == "unlimited")
    return std::numeric_limits<double>::infinity();
  throw std::invalid_argument(where + " must be a byte count or \"unlimited\", got " + v.dump());
}

}  // namespace

std::string escape_label_value(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\')
      o += "\\\\";
    else if (c == '"')
      o += "\\\"";
    else if (c == '\n')
      o += "\\n";
    else
      o += c;
  }
  return o;
}

std::string escape_help(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\')
      o += "\\\\";
    else if (c == '\n')
      o += "\\n";
    else
      o += c;
  }
  return o;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  // Counts and byte sizes print as integers ("10", not "1e+01"); 2^53 is where doubles stop
  // holding every integer.
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int prec = 1; prec <= 17; ++prec) {  // shortest form that reads back as the same double
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string render(const std::vector<Family>& families) {
  std::ostringstream o;
  for (const auto& f : families) {
    if (f.samples.empty()) continue;
    o << "# HELP " << f.name << " " << escape_help(f.help) << "\n# TYPE " << f.name << " " << f.type
      << "\n";
    for (const auto& s : f.samples) {
      o << f.name;
      if (!s.labels.empty()) {
        o << "{";
        for (size_t i = 0; i < s.labels.size(); ++i)
          o << (i ? "," : "") << s.labels[i].first << "=\""
            << escape_label_value(s.labels[i].second) << "\"";
        o << "}";
      }
      o << " " << format_value(s.value) << "\n";
    }
  }
  return o.str();
}

Family check_timestamp(double unix_time_s) {
  return {"fabkit_node_check_timestamp_seconds", "When fabcheck node ran (Unix time)", "gauge", {{{}, unix_time_s}}};
}

std::vector<Family> node_families(const Json& r) {
  std::vector<Family> out;
  out.push_back(findings_family("fabkit_node_findings", r));
  // By code too: an alert names the finding (docs/findings.md), not only its severity.
  Family by_code{"fabkit_node_finding", "Findings of the node report by code and severity (docs/findings.md)",
                 "gauge", {}};
  std::map<std::pair<std::string, std::string>, int> codes;
  const Json& findings = member(r, "findings");
  for (size_t i = 0; findings.is_array() && i < findings.size(); ++i) {
    codes[{string_or(findings[i], "code", "?"), string_or(findings[i], "severity", "?")}]++;
  }
  for (const auto& [k, n] : codes) by_code.samples.push_back({{{"code", k.first}, {"severity", k.second}}, double(n)});
  out.push_back(by_code);
  Family up{
      "fabkit_node_hca_port_active", "1 when the RDMA port state is ACTIVE, else 0", "gauge", {}};
  Family phys{"fabkit_node_hca_port_phys_state_code", "RDMA port physical state code (5 = LinkUp)", "gauge", {}};
  Family info{"fabkit_node_hca_port_info",
              "RDMA port state and link layer as labels (value 1)",
              "gauge",
              {}};
  // Bytes, Prometheus' base unit (promtool rejects "bits"): 200 Gbit/s HDR = 2.5e10.
  Family rate{"fabkit_node_hca_port_rate_bytes_per_second",
              "RDMA port data rate (sysfs rate / 8)",
              "gauge",
              {}};
  const Json& devices = member(member(r, "rdma"), "devices");
  if (!devices.is_null() && !devices.is_array())
    throw std::invalid_argument("rdma.devices must be an array");
  for (size_t d = 0; devices.is_array() && d < devices.size(); ++d) {
    std::string dev = string_or(devices[d], "name", "?");
    const Json& ports = member(devices[d], "ports");
    for (size_t p = 0; ports.is_array() && p < ports.size(); ++p) {
      std::string w = "rdma.devices[" + std::to_string(d) + "].ports[" + std::to_string(p) + "]";
      auto port = number(ports[p], "port", w);
      Labels l = {{"device", dev}, {"port", port ? format_value(*port) : "?"}};
      std::string state = string_or(ports[p], "state", "unknown");
      up.samples.push_back({l, state == "ACTIVE" ? 1.0 : 0.0});
      Labels li = l;
      li.push_back({"state", state});
      li.push_back({"link_layer", string_or(ports[p], "link_layer", "unknown")});
      info.samples.push_back({li, 1.0});
      if (auto g = number(ports[p], "rate_gbps", w)) rate.samples.push_back({l, *g * 1e9 / 8});
      if (auto c = number(ports[p], "phys_state_code", w)) phys.samples.push_back({l, *c});
    }
  }
  out.push_back(up);
  out.push_back(phys);
  out.push_back(info);
  out.push_back(rate);
  Family mem{"fabkit_node_memlock_limit_bytes",
             "RLIMIT_MEMLOCK of the checking process (+Inf = unlimited)",
             "gauge",
             {}};
  const Json& m = member(member(r, "limits"), "memlock_bytes");
  for (const char* k : {"soft", "hard"})
    if (auto v = limit_value(member(m, k), std::string("limits.memlock_bytes.") + k))
      mem.samples.push_back({{{"limit", k}}, *v});
  out.push_back(mem);
  // The socket interfaces NCCL may bind: running, and speed (bytes/s, from sysfs Mbit/s).
  Family running{"fabkit_node_interface_running", "1 when the interface is up and running (what NCCL needs)",
                 "gauge", {}};
  Family speed{"fabkit_node_interface_speed_bytes_per_second", "Interface link speed (speed_mbps x 1e6 / 8)",
               "gauge", {}};
  const Json& ifs = member(member(r, "net"), "interfaces");
  for (size_t i = 0; ifs.is_array() && i < ifs.size(); ++i) {
    if (string_or(ifs[i], "kind", "") == "loopback") continue;
    Labels l = {{"interface", string_or(ifs[i], "name", "?")}};
    const Json& run = member(ifs[i], "running");
    running.samples.push_back({l, run.is_boolean() && run.get<bool>() ? 1.0 : 0.0});
    if (auto mbps = number(ifs[i], "speed_mbps", "net.interfaces[" + std::to_string(i) + "]"))
      speed.samples.push_back({l, *mbps * 1e6 / 8});
  }
  out.push_back(running);
  out.push_back(speed);
  Family gpus{"fabkit_node_gpus", "GPUs the driver manages (gpus.count)", "gauge", {}};
  if (auto n = number(member(r, "gpus"), "count", "gpus")) gpus.samples.push_back({{}, *n});
  out.push_back(gpus);
  for (auto& f : gpu_health_families(r)) out.push_back(std::move(f));
  for (auto& f : pcie_families(r)) out.push_back(std::move(f));
  for (auto& f : roce_qos_families(r)) out.push_back(std::move(f));
  for (auto& f : ib_qos_families(r)) out.push_back(std::move(f));
  for (auto& f : gpu_active_families(r)) out.push_back(std::move(f));
  return out;
}

std::vector<Family> pair_families(const Json& r) {
  std::vector<Family> out;
  out.push_back(findings_family("fabkit_pair_findings", r));
  const Json& p = member(r, "pair");
  Labels hosts = {{"host_a", string_or(member(p, "hosts"), "a", "?")},
                  {"host_b", string_or(member(p, "hosts"), "b", "?")}};
  // busbw in the JSON is GB/s (1e9 bytes/s); Prometheus wants base units.
  Family bus{"fabkit_pair_busbw_bytes_per_second",
             "all-reduce bus bandwidth per transport and message size",
             "gauge",
             {}};
  Family peak{"fabkit_pair_peak_busbw_bytes_per_second",
              "highest busbw of the sweep per transport",
              "gauge",
              {}};
  Family rate{"fabkit_pair_link_rate_bytes_per_second",
              "the link rate the transport was judged against (link_rate_gbit_s / 8)",
              "gauge",
              {}};
  Family ok{"fabkit_pair_transport_ok",
            "1 when the transport ran and every size checked correct",
            "gauge",
            {}};
  const Json& ts = member(p, "transports");
  if (!ts.is_array()) throw std::invalid_argument("pair.transports must be an array");
  for (size_t i = 0; i < ts.size(); ++i) {
    std::string w = "pair.transports[" + std::to_string(i) + "]";
    Labels l = hosts;
    l.push_back({"transport", string_or(ts[i], "transport", "?")});
    ok.samples.push_back(
        {l, string_or(ts[i], "status", "") == "ok" && member(ts[i], "all_correct") != false ? 1.0
                                                                                            : 0.0});
    if (auto v = number(ts[i], "peak_busbw_gbps", w)) peak.samples.push_back({l, *v * 1e9});
    if (auto v = number(ts[i], "link_rate_gbit_s", w)) rate.samples.push_back({l, *v * 1e9 / 8});
    const Json& sizes = member(ts[i], "sizes");
    for (size_t s = 0; sizes.is_array() && s < sizes.size(); ++s) {
      std::string sw = w + ".sizes[" + std::to_string(s) + "]";
      auto bytes = number(sizes[s], "bytes", sw);
      auto bw = number(sizes[s], "busbw_gbps", sw);
      if (!bytes || !bw) continue;
      Labels ls = l;
      ls.push_back({"bytes", format_value(*bytes)});
      bus.samples.push_back({ls, *bw * 1e9});
    }
  }
  for (auto* f : {&ok, &peak, &rate, &bus}) out.push_back(*f);
  return out;
}

}  // namespace fabkit::reports::prom
