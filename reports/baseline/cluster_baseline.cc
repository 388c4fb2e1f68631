#include "reports/baseline/cluster_baseline.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include "reports/baseline/cluster_run_doc.h"
#include "slurm/matrix_judge.h"

namespace fabkit::reports::baseline {
namespace {

std::string key(const std::string& a, const std::string& b) {
  return a < b ? a + "\n" + b : b + "\n" + a;
}

std::string fmt(const char* f, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string gbit(const std::optional<double>& v) {
  return v ? fmt("%.3g", *v) + " Gbit/s" : std::string("no figure");
}

// Nodes: lost, check failed, findings or slowness that appeared since the baseline. Returns the
// hosts gone from the new run.
std::set<std::string> judge_nodes(const ClusterRun& olds, const ClusterRun& news,
                                  ClusterBaselineResult& r) {
  std::map<std::string, const ClusterRunNode*> new_nodes;
  for (const auto& n : news.nodes) new_nodes[n.host] = &n;
  std::set<std::string> lost_hosts;
  for (const auto& on : olds.nodes) {
    ClusterNodeRow row{on.host, on.check, "", on.fail, on.warn, 0, 0, on.slow, false, false};
    auto it = new_nodes.find(on.host);
    if (it == new_nodes.end()) {
      lost_hosts.insert(on.host);
      row.worse = true;
      r.findings.push_back(fail("baseline.cluster_node_lost", on.host,
                                "in the baseline run, not in the new one",
                                "run fabcheck cluster over the same hosts (or an allocation of "
                                "the same nodes) as the baseline; a drained node is replaced, "
                                "not compared"));
      r.nodes.push_back(row);
      continue;
    }
    const ClusterRunNode& nn = *it->second;
    row.new_check = nn.check;
    row.new_fail = nn.fail;
    row.new_warn = nn.warn;
    row.new_slow = nn.slow;
    std::string run_node = "fabcheck node on " + on.host +
                           " names its findings; fabcheck report --baseline OLD NEW on two saved "
                           "node reports of it shows what changed";
    if (on.check == "ok" && nn.check != "ok") {
      row.worse = true;
      r.findings.push_back(fail(
          "baseline.cluster_node_check_failed", on.host,
          "its node check ran in the baseline, " + nn.check + " now: " + nn.error,
          "run `fabcheck node` on " + on.host + " by hand; check that the launcher reaches it"));
    } else if (on.check == "ok" && (nn.fail > on.fail || nn.warn > on.warn)) {
      row.worse = true;
      std::string msg = "its own findings grew since the baseline: fail " +
                        std::to_string(on.fail) + " → " + std::to_string(nn.fail) + ", warn " +
                        std::to_string(on.warn) + " → " + std::to_string(nn.warn);
      r.findings.push_back(
          nn.fail > on.fail ? fail("baseline.cluster_node_findings_worse", on.host, msg, run_node)
                            : warn("baseline.cluster_node_findings_worse", on.host, msg, run_node));
    }
    if (!on.slow && nn.slow) {
      row.worse = true;
      r.findings.push_back(fail("baseline.cluster_node_slow", on.host,
                                "judged slow against its peers now, not in the baseline (score " +
                                    gbit(on.score_gbit_s) + " → " + gbit(nn.score_gbit_s) + ")",
                                run_node));
    }
    r.nodes.push_back(row);
  }
  std::set<std::string> old_hosts;
  for (const auto& on : olds.nodes) old_hosts.insert(on.host);
  for (const auto& nn : news.nodes)
    if (!old_hosts.count(nn.host)) {
      r.nodes.push_back({nn.host, "", nn.check, 0, 0, nn.fail, nn.warn, false, nn.slow, false});
      r.findings.push_back(
          info("baseline.cluster_node_new", nn.host, "not in the baseline: nothing to compare"));
    }
  return lost_hosts;
}

// Pairs, matched by their two host names in either order: regressions, failed and lost pairs.
void judge_pairs(const ClusterRun& olds, const ClusterRun& news,
                 const std::set<std::string>& lost_hosts, const ClusterBaselineOptions& o,
                 ClusterBaselineResult& r) {
  std::map<std::string, const ClusterRunPair*> new_pairs;
  for (const auto& p : news.pairs) new_pairs[key(p.a, p.b)] = &p;
  std::set<std::string> old_keys;
  for (const auto& op : olds.pairs) {
    old_keys.insert(key(op.a, op.b));
    ClusterPairRow row;
    row.a = op.a;
    row.b = op.b;
    row.old_state = op.state;
    row.old_gbit_s = op.gbit_s;
    row.old_rtt_us = op.rtt_us;
    row.old_source = op.source;
    auto it = new_pairs.find(key(op.a, op.b));
    const ClusterRunPair* np = it == new_pairs.end() ? nullptr : it->second;
    if (np) {
      row.a = np->a;
      row.b = np->b;
      row.new_state = np->state;
      row.new_gbit_s = np->gbit_s;
      row.new_rtt_us = np->rtt_us;
      row.new_source = np->source;
      row.link_rate_gbit_s = np->link_rate_gbit_s;
    }
    const std::string name = row.a + "<->" + row.b;
    const std::string pair_fix = "fabcheck pair " + row.a + " " + row.b +
                                 " --json names the interface pair, its speed and the RDMA "
                                 "rails; ibstat and the switch ports of both nodes";
    if (op.gbit_s && !row.new_gbit_s) {
      row.lost = true;
      if (!np && (lost_hosts.count(op.a) || lost_hosts.count(op.b))) {
        // The lost node's own finding says it.
      } else if (!np) {
        r.findings.push_back(
            fail("baseline.cluster_pair_lost", name,
                 "measured in the baseline (" + gbit(op.gbit_s) + "), not in the new run",
                 "run both with the same --pairs plan: all measures every pair, "
                 "ring only neighbours"));
      } else {
        r.findings.push_back(fail("baseline.cluster_pair_failed", name,
                                  gbit(op.gbit_s) + " in the baseline, failed now: " + np->error,
                                  pair_fix));
      }
    } else if (op.gbit_s && row.new_gbit_s) {
      row.change_pct = *op.gbit_s > 0 ? (*row.new_gbit_s / *op.gbit_s - 1) * 100 : 0;
      row.regressed = *row.new_gbit_s < *op.gbit_s * (1 - o.regression_pct / 100);
      if (row.regressed)
        r.findings.push_back(
            fail("baseline.cluster_pair_regression", name,
                 "bandwidth " + fmt("%.3g", *op.gbit_s) + " → " + fmt("%.3g", *row.new_gbit_s) +
                     " Gbit/s (" + fmt("%+.1f", *row.change_pct) + "%), more than " +
                     fmt("%g", o.regression_pct) + "% below the baseline" +
                     (op.source != np->source
                          ? "; the figure's source changed: " + op.source + " → " + np->source
                          : std::string()),
                 pair_fix));
    }
    if (np && op.rtt_us && np->rtt_us && *op.rtt_us > 0 &&
        *np->rtt_us > *op.rtt_us * (1 + o.rtt_regression_pct / 100) &&
        *np->rtt_us - *op.rtt_us >= o.rtt_min_rise_us) {
      row.rtt_regressed = true;
      r.findings.push_back(warn(
          "baseline.cluster_rtt_regression", name,
          "median RTT " + fmt("%.3g", *op.rtt_us) + " → " + fmt("%.3g", *np->rtt_us) + " µs (" +
              fmt("%+.0f", (*np->rtt_us / *op.rtt_us - 1) * 100) + "%) since the baseline",
          "a longer path (another switch hop, a route through a different "
          "interface) or a loaded node; " +
              pair_fix));
    }
    r.pairs.push_back(row);
  }
  for (const auto& np : news.pairs) {
    if (old_keys.count(key(np.a, np.b))) continue;
    ClusterPairRow row;
    row.a = np.a;
    row.b = np.b;
    row.new_state = np.state;
    row.new_gbit_s = np.gbit_s;
    row.new_rtt_us = np.rtt_us;
    row.new_source = np.source;
    row.link_rate_gbit_s = np.link_rate_gbit_s;
    r.pairs.push_back(row);
    if (np.gbit_s)
      r.findings.push_back(info("baseline.cluster_pair_new", np.a + "<->" + np.b,
                                "not in the baseline: nothing to compare"));
  }
}

// Expected figures of the new run alone: link rate and the run's median.
void judge_expected(const ClusterRun& news, const ClusterBaselineOptions& o,
                    ClusterBaselineResult& r) {
  std::vector<double> figures;
  for (const auto& np : news.pairs)
    if (np.gbit_s) figures.push_back(*np.gbit_s);
  // Fewer than 3 pairs have no majority to say which one is off.
  if (figures.size() >= 3) r.median_gbit_s = slurm::median(figures);
  for (auto& row : r.pairs) {
    if (!row.new_gbit_s) continue;
    const std::string name = row.a + "<->" + row.b;
    double v = *row.new_gbit_s;
    if (o.expect_link_fraction > 0 && row.link_rate_gbit_s && *row.link_rate_gbit_s > 0 &&
        v < o.expect_link_fraction * *row.link_rate_gbit_s) {
      row.below_link_rate = true;
      r.findings.push_back(warn(
          "baseline.cluster_below_link_rate", name,
          fmt("%.3g", v) + " Gbit/s is " + fmt("%.0f", v / *row.link_rate_gbit_s * 100) +
              "% of the " + fmt("%g", *row.link_rate_gbit_s) + " Gbit/s link rate (" +
              row.new_source + "); expected ≥ " + fmt("%.0f", o.expect_link_fraction * 100) + "%",
          row.new_source.rfind("tcp", 0) == 0
              ? "a single TCP stream rarely reaches line rate: run with an RDMA RC test (HCAs "
                "in the node reports) or --expect-link-fraction 0 to turn this check off"
              : "ibstat on both nodes (width, speed, symbol errors); reseat or replace the cable "
                "or transceiver of the slow rail"));
    }
    if (o.expect_median_pct > 0 && r.median_gbit_s &&
        v < (1 - o.expect_median_pct / 100) * *r.median_gbit_s) {
      row.below_median = true;
      r.findings.push_back(
          warn("baseline.cluster_pair_below_median", name,
               fmt("%.3g", v) + " Gbit/s is " + fmt("%.0f", v / *r.median_gbit_s * 100) +
                   "% of the median " + fmt("%.3g", *r.median_gbit_s) + " Gbit/s of the run's " +
                   std::to_string(figures.size()) + " measured pairs; expected within " +
                   fmt("%g", o.expect_median_pct) + "%",
               "the one slow link among healthy ones is a cable, transceiver or switch port: " +
                   std::string("check both ends of ") + name + " (fabcheck pair " + row.a + " " +
                   row.b + ")"));
    }
  }
}

}  // namespace

void check_cluster_run_report(const Json& doc, const std::string& which) {
  read_cluster_run(doc, which);
}

ClusterBaselineResult compare_cluster_baseline(const Json& old_doc, const Json& new_doc,
                                               const ClusterBaselineOptions& o) {
  ClusterRun olds = read_cluster_run(old_doc, "old"), news = read_cluster_run(new_doc, "new");
  ClusterBaselineResult r;
  auto lost_hosts = judge_nodes(olds, news, r);
  judge_pairs(olds, news, lost_hosts, o, r);
  judge_expected(news, o, r);
  return r;
}

}  // namespace fabkit::reports::baseline
