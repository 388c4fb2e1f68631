#include "slurm/sim/measured.h"

#include <algorithm>
#include <stdexcept>

#include "slurm/matrix_judge.h"
#include "slurm/search_cost.h"

namespace fabkit::slurm::sim {
namespace {

[[noreturn]] void bad(const std::string& source, const std::string& field,
                      const std::string& what) {
  throw std::invalid_argument(source + ": " + field + ": " + what +
                              " (give a `fabcheck cluster --json` report)");
}

const Json& need(const Json& j, const char* key, const std::string& source,
                 const std::string& path) {
  if (!j.is_object() || !j.contains(key)) bad(source, path + key, "missing");
  return j[key];
}

double number(const Json& j, const char* key, const std::string& source, const std::string& path) {
  const Json& v = need(j, key, source, path);
  if (!v.is_number()) bad(source, path + key, "not a number");
  return v.get<double>();
}

double num_or(const Json& j, const char* key, double fallback) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

}  // namespace

std::optional<GroupModel> fit_group_model(const Json& s, int* used) {
  if (!s.is_object() || !s.contains("rounds") || !s["rounds"].is_array()) return std::nullopt;
  GroupModel m;
  // The run's sizing: one size for every group (a report from before per-group sizing, or
  // --search-bytes), else n x chunk_bytes; each clean group's own bytes when it has them.
  const double run_bytes = num_or(s, "bytes", 0);
  if (run_bytes > 0) m.policy.fixed_bytes = static_cast<uint64_t>(run_bytes);
  m.policy.chunk_bytes = static_cast<uint64_t>(num_or(s, "chunk_bytes", m.policy.chunk_bytes));
  const double ref = num_or(s, "reference_gbit_s", 0), thr = num_or(s, "threshold_gbit_s", 0);
  if (ref <= 0) return std::nullopt;
  if (thr > 0) m.fraction = thr / ref;
  struct Group {
    int n, rings;
    double busbw, elapsed_s, bytes;
  };
  std::vector<Group> clean;
  for (const auto& r : s["rounds"])
    for (const auto& g : r.value("groups", Json::array())) {
      if (!g.is_object() || g.value("positive", true)) continue;
      if (g.contains("error") && !g["error"].is_null()) continue;
      if (!g.contains("min_busbw_gbps") || !g["min_busbw_gbps"].is_number()) continue;
      const int n = static_cast<int>(g.value("hosts", Json::array()).size());
      if (n < 2) continue;
      const double bytes =
          num_or(g, "bytes", static_cast<double>(group_test_bytes(n, m.policy)));
      clean.push_back({n, g.value("rings", 0), g["min_busbw_gbps"].get<double>(),
                       num_or(g, "elapsed_ms", 0) / 1000, bytes});
    }
  if (used) *used = static_cast<int>(clean.size());
  if (clean.empty()) return std::nullopt;
  // 1/busbw = alpha n / S + 1/B: a least-squares line in x = n / S through the clean groups gives
  // alpha (slope) and the ring's link figure B (intercept). When the groups cannot separate the two
  // (one group size, or a line with no positive intercept: on a loaded machine a small group's
  // ring can beat the matrix's pair figure), all of a group's time is taken as latency, the
  // upper bound alpha <= S / (n busbw), its median over the groups.
  {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (const auto& g : clean) {
      const double x = g.n / g.bytes, y = 1 / (g.busbw * 1e9);
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const double k = static_cast<double>(clean.size()), den = k * sxx - sx * sx;
    const double slope = den > 0 ? (k * sxy - sx * sy) / den : 0, icpt = (sy - slope * sx) / k;
    if (den > 0 && slope > 0 && icpt > 0) {
      m.alpha_s = slope;
    } else {
      std::vector<double> alphas;
      for (const auto& g : clean) alphas.push_back(g.bytes / g.n / (g.busbw * 1e9));
      m.alpha_s = median(alphas);
    }
  }
  // elapsed - rings x ring_seconds = overhead + rings x setup: least squares over the groups.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& g : clean) {
    GroupModel at = m;  // this group's own size
    at.policy.fixed_bytes = static_cast<uint64_t>(g.bytes);
    const double x = g.rings, y = g.elapsed_s - g.rings * ring_seconds(at, g.n, ref);
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double k = static_cast<double>(clean.size()), den = k * sxx - sx * sx;
  double slope = den > 0 ? (k * sxy - sx * sy) / den : 0;
  double intercept = (sy - slope * sx) / k;
  if (slope < 0) {  // noise: keep the mean as overhead
    slope = 0;
    intercept = sy / k;
  }
  if (intercept < 0) {  // all of it per ring
    intercept = 0;
    slope = sxx > 0 ? sxy / sxx : 0;
  }
  m.group_overhead_s = intercept;
  m.ring_setup_s = std::max(0.0, slope);
  // One run gives one start: taken as per candidate (the netns machine starts every agent on its
  // 2 cores, so the start grows with them); a report from before the kept agents has none.
  const double start_s = num_or(s, "agents_start_ms", 0) / 1000;
  const double candidates = s.contains("candidates") && s["candidates"].is_array()
                                ? static_cast<double>(s["candidates"].size())
                                : 0;
  if (start_s > 0 && candidates > 0) m.agents_start_s_per_node = start_s / candidates;
  return m;
}

MeasuredRun measured_from_report(const Json& doc, const std::string& source) {
  MeasuredRun r;
  if (!doc.is_object() || doc.value("kind", "") != "cluster")
    bad(source, "kind", "not \"cluster\"");
  const Json& c = need(doc, "cluster", source, "");
  const Json& hosts = need(c, "hosts", source, "cluster.");
  if (!hosts.is_array() || hosts.size() < 2) bad(source, "cluster.hosts", "fewer than 2 hosts");
  r.hosts = static_cast<int>(hosts.size());
  r.plan = c.value("plan", "");
  r.max_parallel = static_cast<int>(number(c, "max_parallel", source, "cluster."));
  const Json& sch = need(c, "schedule", source, "cluster.");
  r.schedule_waves = static_cast<int>(number(sch, "waves", source, "cluster.schedule."));
  const double pairs_ms = number(sch, "pairs_ms", source, "cluster.schedule.");
  if (r.schedule_waves < 1) bad(source, "cluster.schedule.waves", "below 1");
  r.per_wave_s = pairs_ms / 1000 / r.schedule_waves;
  r.node_checks_s = num_or(sch, "nodes_ms", 0) / 1000;
  r.retest_s = num_or(sch, "retest_ms", 0) / 1000;
  r.retest_runs = static_cast<int>(num_or(sch, "retest_runs", 0));
  const Json& matrix = need(c, "matrix", source, "cluster.");
  r.slow_fraction = num_or(matrix, "slow_fraction", 0.5);
  const Json& pairs = need(matrix, "pairs", source, "cluster.matrix.");
  if (!pairs.is_array()) bad(source, "cluster.matrix.pairs", "not an array");
  std::vector<double> elapsed;
  for (const auto& p : pairs) {
    if (!p.is_object()) bad(source, "cluster.matrix.pairs[]", "not an object");
    elapsed.push_back(num_or(p, "elapsed_ms", 0) / 1000);
    if (p.value("state", "") == "ok" && p.contains("gbit_s") && p["gbit_s"].is_number() &&
        p["gbit_s"].get<double>() > 0)
      r.healthy_gbit_s.push_back(p["gbit_s"].get<double>());
  }
  if (r.healthy_gbit_s.empty())
    bad(source, "cluster.matrix.pairs[].gbit_s", "no pair in state \"ok\" with a figure");
  r.median_pair_s = median(elapsed);
  if (c.contains("search") && c["search"].is_object()) {
    const Json& s = c["search"];
    r.search_ran = s.value("ran", false);
    r.search_s = num_or(s, "elapsed_ms", 0) / 1000;
    r.search_rounds = static_cast<int>(num_or(s, "rounds_used", 0));
    if (s.contains("outcome") && s["outcome"].is_string()) r.search_outcome = s["outcome"];
    if (s.contains("link") && s["link"].is_string()) r.search_link = s["link"];
    if (s.contains("trigger") && s["trigger"].is_string()) r.search_trigger = s["trigger"];
    r.group = fit_group_model(s, &r.groups_fitted);
  }
  if (doc.contains("findings") && doc["findings"].is_array())
    for (const auto& f : doc["findings"])
      if (f.is_object() && f.value("severity", "") != "info")
        r.verdict.push_back(f.value("code", "?") + " " + f.value("subject", ""));
  r.wall_s = r.node_checks_s + pairs_ms / 1000 + r.retest_s + r.search_s;
  return r;
}

}  // namespace fabkit::slurm::sim
