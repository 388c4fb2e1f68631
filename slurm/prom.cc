#include "slurm/prom.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "common/json.h"

namespace fabkit::slurm {
namespace {

const Json* section(const Report& r, const char* name) {
  for (const auto& s : r.sections)
    if (s.name == name) return &s.facts;
  return nullptr;
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Samples grouped by metric family: the exposition format wants each family's samples
// together, under one HELP/TYPE, and ports and interfaces are visited one after the other.
struct Out {
  std::vector<std::string> order;
  std::map<std::string, std::pair<std::string, std::string>> families;  // name -> help, samples
  void metric(const std::string& name, const std::string& help, const std::string& labels,
              double v) {
    auto [it, fresh] = families.try_emplace(name, help, "");
    if (fresh) order.push_back(name);
    it->second.second += name + (labels.empty() ? "" : "{" + labels + "}") + " " + num(v) + "\n";
  }
  std::string text() const {
    std::ostringstream s;
    for (const auto& n : order) {
      const auto& [help, samples] = families.at(n);
      s << "# HELP " << n << " " << help << "\n# TYPE " << n << " gauge\n" << samples;
    }
    return s.str();
  }
};

std::string label(const std::string& k, const std::string& v) {
  return k + "=\"" + prom_label_value(v) + "\"";
}

}  // namespace

std::string prom_label_value(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string node_prom_text(const Report& r, double unix_time_s) {
  Out o;
  std::map<std::string, int> by_sev{{"fail", 0}, {"warn", 0}, {"info", 0}};
  std::map<std::pair<std::string, std::string>, int> by_code;
  for (const auto& f : r.findings) {
    by_sev[to_string(f.severity)]++;
    by_code[{f.code, to_string(f.severity)}]++;
  }
  o.metric("fabkit_node_check_timestamp_seconds", "When fabcheck node ran (Unix time)", "",
           unix_time_s);
  for (const auto& [sev, n] : by_sev)
    o.metric("fabkit_findings", "Findings of the last fabcheck node run by severity",
             label("severity", sev), n);
  for (const auto& [k, n] : by_code)
    o.metric("fabkit_finding", "Findings of the last fabcheck node run by code (docs/findings.md)",
             label("code", k.first) + "," + label("severity", k.second), n);
  if (const Json* rdma = section(r, "rdma")) {
    for (const auto& d : rdma->value("devices", Json::array())) {
      if (!d.is_object() || !d.contains("name") || !d["name"].is_string()) continue;
      for (const auto& p : d.value("ports", Json::array())) {
        if (!p.is_object() || !p.contains("port") || !p["port"].is_number_integer()) continue;
        std::string l = label("hca", d["name"].get<std::string>()) + "," +
                        label("port", std::to_string(p["port"].get<int>()));
        if (p.contains("link_layer") && p["link_layer"].is_string())
          l += "," + label("link_layer", p["link_layer"]);
        if (p.contains("state_code") && p["state_code"].is_number())
          o.metric("fabkit_rdma_port_state", "RDMA port state code (4 = ACTIVE)", l,
                   p["state_code"].get<double>());
        if (p.contains("phys_state_code") && p["phys_state_code"].is_number())
          o.metric("fabkit_rdma_port_phys_state", "RDMA port physical state code (5 = LinkUp)", l,
                   p["phys_state_code"].get<double>());
        if (p.contains("state_code") && p["state_code"].is_number())
          o.metric("fabkit_rdma_port_active", "1 when the RDMA port is ACTIVE", l,
                   p["state_code"] == 4 ? 1 : 0);
        if (p.contains("rate_gbps") && p["rate_gbps"].is_number())
          o.metric("fabkit_rdma_port_rate_gbps", "RDMA port data rate (Gbit/s)", l,
                   p["rate_gbps"].get<double>());
      }
    }
  }
  if (const Json* net = section(r, "net")) {
    for (const auto& i : net->value("interfaces", Json::array())) {
      if (!i.is_object() || !i.contains("name") || !i["name"].is_string()) continue;
      if (i.value("kind", "") == "loopback") continue;
      std::string l = label("ifname", i["name"].get<std::string>());
      o.metric("fabkit_net_interface_running",
               "1 when the interface is up and running (what NCCL needs)", l,
               i.value("running", false) ? 1 : 0);
      if (i.contains("speed_mbps") && i["speed_mbps"].is_number())
        o.metric("fabkit_net_interface_speed_mbps", "Link speed (Mbit/s)", l,
                 i["speed_mbps"].get<double>());
    }
  }
  return o.text();
}

}  // namespace fabkit::slurm
