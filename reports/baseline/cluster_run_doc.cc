#include "reports/baseline/cluster_run_doc.h"

#include <stdexcept>

namespace fabkit::reports::baseline {
namespace {

std::optional<double> number(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number())
    throw std::invalid_argument(where + "." + key + " must be a number, got " + j[key].dump());
  return j[key].get<double>();
}

std::string str(const Json& j, const char* key, const std::string& where, bool required) {
  if (j.is_object() && j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  if (required || (j.is_object() && j.contains(key) && !j[key].is_null()))
    throw std::invalid_argument(where + "." + key + " must be a string");
  return "";
}

bool flag(const Json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return false;
  if (!j[key].is_boolean())
    throw std::invalid_argument(where + "." + key + " must be true or false, got " + j[key].dump());
  return j[key].get<bool>();
}

}  // namespace

ClusterRun read_cluster_run(const Json& doc, const std::string& which) {
  if (!doc.is_object() || !doc.contains("kind") || doc["kind"] != "cluster" ||
      !doc.contains("cluster") || !doc["cluster"].is_object() ||
      !doc["cluster"].contains("matrix") || !doc["cluster"].contains("nodes"))
    throw std::invalid_argument(
        which +
        ": not a cluster run report (kind \"cluster\" with cluster.matrix and cluster.nodes; a "
        "--plan-only report has neither); give two fabcheck cluster --json outputs");
  const Json& c = doc["cluster"];
  const Json& ps = c["matrix"].is_object() ? c["matrix"].value("pairs", Json()) : Json();
  if (!ps.is_array())
    throw std::invalid_argument(which + ": cluster.matrix.pairs must be an array");
  if (!c["nodes"].is_array())
    throw std::invalid_argument(which + ": cluster.nodes must be an array");
  ClusterRun r;
  for (size_t i = 0; i < ps.size(); ++i) {
    std::string w = which + ": cluster.matrix.pairs[" + std::to_string(i) + "]";
    ClusterRunPair p;
    p.a = str(ps[i], "a", w, true);
    p.b = str(ps[i], "b", w, true);
    p.ok = flag(ps[i], "ok", w);
    p.state = str(ps[i], "state", w, false);
    p.source = str(ps[i], "source", w, false);
    p.error = str(ps[i], "error", w, false);
    p.gbit_s = number(ps[i], "gbit_s", w);
    p.rtt_us = number(ps[i], "rtt_us", w);
    p.link_rate_gbit_s = number(ps[i], "link_rate_gbit_s", w);  // absent in older reports
    if (!p.ok) p.gbit_s.reset();
    r.pairs.push_back(std::move(p));
  }
  for (size_t i = 0; i < c["nodes"].size(); ++i) {
    const Json& n = c["nodes"][i];
    std::string w = which + ": cluster.nodes[" + std::to_string(i) + "]";
    ClusterRunNode node;
    node.host = str(n, "host", w, true);
    node.check = str(n, "check", w, true);
    node.error = str(n, "error", w, false);
    if (n.contains("findings") && n["findings"].is_object()) {
      node.fail = static_cast<int>(number(n["findings"], "fail", w + ".findings").value_or(0));
      node.warn = static_cast<int>(number(n["findings"], "warn", w + ".findings").value_or(0));
    }
    node.slow = flag(n, "slow", w);
    node.score_gbit_s = number(n, "score_gbit_s", w);
    r.nodes.push_back(std::move(node));
  }
  return r;
}

}  // namespace fabkit::reports::baseline
