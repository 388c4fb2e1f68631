#include "reports/baseline/node_baseline.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "reports/text/table.h"

namespace fabkit::reports::baseline {
namespace {

using text::Align;
using text::Table;

struct Port {
  std::string link_layer, state;
  std::optional<double> rate;
};

std::optional<double> number(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number())
    throw std::invalid_argument(where + "." + key + " must be a number, got " + j[key].dump());
  return j[key].get<double>();
}

std::string str(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::map<std::string, Port> ports_of(const Json& doc, const std::string& which) {
  if (!doc.is_object() || str(doc, "kind") != "node")
    throw std::invalid_argument(which +
                                ": not a node report (kind \"node\"); give two fabcheck "
                                "node --json outputs of the same node");
  std::map<std::string, Port> out;
  if (!doc.contains("rdma") || !doc["rdma"].contains("devices")) return out;
  const Json& devs = doc["rdma"]["devices"];
  if (!devs.is_array()) throw std::invalid_argument(which + ": rdma.devices must be an array");
  for (size_t d = 0; d < devs.size(); ++d) {
    std::string w = which + ": rdma.devices[" + std::to_string(d) + "]";
    const Json& ports = devs[d].value("ports", Json::array());
    if (!ports.is_array()) throw std::invalid_argument(w + ".ports must be an array");
    for (size_t p = 0; p < ports.size(); ++p) {
      std::string pw = w + ".ports[" + std::to_string(p) + "]";
      auto n = number(ports[p], "port", pw);
      if (!n) throw std::invalid_argument(pw + ".port missing");
      out[str(devs[d], "name") + ":" + std::to_string(static_cast<int>(*n))] = {
          str(ports[p], "link_layer"), str(ports[p], "state"), number(ports[p], "rate_gbps", pw)};
    }
  }
  return out;
}

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace

std::vector<Finding> judge_port_rates(const std::vector<PortRow>& ports) {
  std::map<std::string, double> best;  // link layer -> fastest ACTIVE rate
  for (const auto& p : ports)
    if (p.new_state == "ACTIVE" && p.new_rate_gbps)
      best[p.link_layer] = std::max(best[p.link_layer], *p.new_rate_gbps);
  std::vector<Finding> out;
  for (const auto& p : ports)
    if (p.new_state == "ACTIVE" && p.new_rate_gbps && *p.new_rate_gbps < best[p.link_layer])
      out.push_back(warn("baseline.port_rate_mismatch", p.port,
                         "ACTIVE at " + fmt(*p.new_rate_gbps) +
                             " Gbit/s while this node's fastest " + p.link_layer +
                             " port runs at " + fmt(best[p.link_layer]) + " Gbit/s",
                         "ibstat " + p.port.substr(0, p.port.find(':')) +
                             " (width and speed: a 4X port at 1X, or HDR at EDR, is a cable, "
                             "transceiver or switch-port setting); reseat or replace the cable"));
  return out;
}

NodeBaselineResult compare_node_baseline(const Json& old_doc, const Json& new_doc) {
  auto olds = ports_of(old_doc, "old");
  auto news = ports_of(new_doc, "new");
  NodeBaselineResult r;
  std::map<std::string, PortRow> rows;
  for (const auto& [k, p] : olds) rows[k] = {k, p.link_layer, p.state, "", p.rate, std::nullopt};
  for (const auto& [k, p] : news) {
    auto& row = rows[k];
    row.port = k;
    row.link_layer = p.link_layer;
    row.new_state = p.state;
    row.new_rate_gbps = p.rate;
  }
  for (auto& [k, row] : rows) {
    r.ports.push_back(row);
    if (row.old_state == "ACTIVE" && row.new_state != "ACTIVE")
      r.findings.push_back(
          fail("baseline.port_lost", k,
               "ACTIVE in the baseline, " +
                   (row.new_state.empty() ? std::string("absent") : row.new_state) + " now",
               "ibstat; check the cable and the subnet manager (IB) or the switch "
               "port (RoCE); fabcheck node names the port's own findings"));
    else if (row.old_state == "ACTIVE" && row.old_rate_gbps && row.new_rate_gbps &&
             *row.new_rate_gbps < *row.old_rate_gbps)
      r.findings.push_back(fail("baseline.port_rate_dropped", k,
                                "rate " + fmt(*row.old_rate_gbps) + " → " +
                                    fmt(*row.new_rate_gbps) + " Gbit/s since the baseline",
                                "ibstat: the port trained to a lower width or speed; reseat or "
                                "replace the cable or transceiver"));
  }
  for (auto& f : judge_port_rates(r.ports)) r.findings.push_back(std::move(f));
  auto gpus = [](const Json& d, const std::string& which) {
    return d.contains("gpus") ? number(d["gpus"], "count", which + ": gpus") : std::nullopt;
  };
  r.old_gpus = gpus(old_doc, "old");
  r.new_gpus = gpus(new_doc, "new");
  if (r.old_gpus && r.new_gpus && *r.new_gpus < *r.old_gpus)
    r.findings.push_back(fail("baseline.gpu_count_dropped", "GPUs",
                              fmt(*r.old_gpus) + " in the baseline, " + fmt(*r.new_gpus) + " now",
                              "nvidia-smi -L; dmesg | grep -i xid: a GPU fell off the bus or the "
                              "driver failed to bind it; drain the node"));
  r.gpu_health = compare_gpu_health(old_doc, new_doc, r.findings);
  r.pcie = compare_pcie_baseline(old_doc, new_doc);
  for (const auto& f : r.pcie.findings) r.findings.push_back(f);
  r.roce_qos = compare_roce_qos_baseline(old_doc, new_doc);
  for (const auto& f : r.roce_qos.findings) r.findings.push_back(f);
  r.gpu_active = compare_gpu_active(old_doc, new_doc);
  for (const auto& f : r.gpu_active.findings) r.findings.push_back(f);
  return r;
}

Json node_baseline_to_json(const NodeBaselineResult& r, const std::string& old_path,
                           const std::string& new_path) {
  auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(); };
  auto state = [](const std::string& s) { return s.empty() ? Json() : Json(s); };
  Json ports = Json::array();
  for (const auto& p : r.ports)
    ports.push_back({{"port", p.port},
                     {"link_layer", p.link_layer},
                     {"old_state", state(p.old_state)},
                     {"new_state", state(p.new_state)},
                     {"old_rate_gbps", opt(p.old_rate_gbps)},
                     {"new_rate_gbps", opt(p.new_rate_gbps)}});
  // GPU counts are integers, as gpus.count is in the node report (read back as a double).
  auto count = [](const std::optional<double>& v) {
    return v ? Json(static_cast<int64_t>(*v)) : Json(nullptr);
  };
  Json health = Json::array();
  for (const auto& g : r.gpu_health)
    health.push_back({{"gpu", g.gpu},
                      {"uuid", g.uuid},
                      {"ecc_counter", g.ecc_counter.empty() ? Json() : Json(g.ecc_counter)},
                      {"ecc_uncorrected_new", count(g.ecc_uncorrected_new)},
                      {"ecc_corrected_new", count(g.ecc_corrected_new)},
                      {"remapped_rows_new", count(g.remapped_rows_new)},
                      {"nvlink_errors_new", count(g.nvlink_errors_new)}});
  Json j = {{"baseline_version", 1},
            {"old", old_path},
            {"new", new_path},
            {"ports", ports},
            {"gpus", {{"old", count(r.old_gpus)}, {"new", count(r.new_gpus)}}},
            {"gpu_health", health},
            {"pcie", pcie_baseline_to_json(r.pcie)}};
  // Only when a report ran `fabcheck node --active`, so older baselines read as before.
  if (r.gpu_active.present) j["gpu_active"] = gpu_active_baseline_json(r.gpu_active);
  // Only when a report has a RoCE port, so baselines of other nodes read as before.
  if (r.roce_qos.present) j["roce_qos"] = roce_qos_baseline_json(r.roce_qos);
  return j;
}

std::string node_baseline_table_text(const NodeBaselineResult& r) {
  std::string out = "RDMA ports, baseline vs new (state, rate in Gbit/s)\n";
  auto rate = [](const std::optional<double>& v) { return v ? fmt(*v) : std::string("-"); };
  Table t({{"port"}, {"link_layer"}, {"old_state"}, {"old_rate", Align::kRight}, {"new_state"},
           {"new_rate", Align::kRight}});
  for (const auto& p : r.ports)
    t.add_row({p.port, p.link_layer, p.old_state.empty() ? "-" : p.old_state,
               rate(p.old_rate_gbps), p.new_state.empty() ? "-" : p.new_state,
               rate(p.new_rate_gbps)});
  if (!r.ports.empty()) {
    std::ostringstream table;
    t.render(table);
    out += table.str();
  }
  if (r.ports.empty()) out += "  (no RDMA ports in either report)\n";
  out += "GPUs: " + rate(r.old_gpus) + " → " + rate(r.new_gpus) + "\n";
  if (!r.gpu_health.empty()) {
    out += "GPU errors new since the baseline (ECC uncorrected/corrected, remapped rows, NVLink)\n";
    Table g({{"gpu"},
             {"ecc_unc", Align::kRight},
             {"ecc_corr", Align::kRight},
             {"remapped", Align::kRight},
             {"nvlink", Align::kRight},
             {"ecc_counter"}});
    for (const auto& h : r.gpu_health)
      g.add_row({h.gpu, rate(h.ecc_uncorrected_new), rate(h.ecc_corrected_new),
                 rate(h.remapped_rows_new), rate(h.nvlink_errors_new),
                 h.ecc_counter.empty() ? "-" : h.ecc_counter});
    std::ostringstream table;
    g.render(table);
    out += table.str();
  }
  out += pcie_baseline_table_text(r.pcie);
  out += roce_qos_baseline_text(r.roce_qos);
  out += gpu_active_baseline_text(r.gpu_active);
  return out;
}

}  // namespace fabkit::reports::baseline
