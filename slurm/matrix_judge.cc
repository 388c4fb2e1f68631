#include "slurm/matrix_judge.h"

#include <algorithm>
#include <cstdio>

namespace fabkit::slurm {
namespace {

std::string gbit(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g Gbit/s", v);
  return buf;
}

double figure(const PairMeasurement& m) { return m.ok && m.gbit_s ? *m.gbit_s : 0.0; }

std::string drain_fix(const std::string& host, const std::string& reason) {
  return "scontrol update NodeName=" + host + " State=DRAIN Reason=\"fabcheck: " + reason + "\"";
}

}  // namespace

double upper_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

MatrixVerdict judge_matrix(const std::vector<std::string>& hosts,
                           const std::vector<PairMeasurement>& ms, const MatrixOptions& o) {
  MatrixVerdict v;
  const int n = static_cast<int>(hosts.size());
  std::vector<std::vector<double>> rows(n);
  v.nodes.resize(n);
  for (int i = 0; i < n; ++i) v.nodes[i].host = hosts[i];
  for (const auto& m : ms) {
    for (int x : {m.a, m.b}) {
      rows[x].push_back(figure(m));
      v.nodes[x].measured++;
      if (!m.ok) v.nodes[x].failed++;
    }
  }
  std::vector<double> scores;
  for (int i = 0; i < n; ++i) {
    if (rows[i].empty()) continue;
    v.nodes[i].score_gbit_s = upper_median(rows[i]);
    scores.push_back(*v.nodes[i].score_gbit_s);
  }
  if (!scores.empty()) v.reference_gbit_s = median(scores);
  const double ref = v.reference_gbit_s.value_or(0);

  if (!ms.empty() && ref <= 0) {
    v.findings.push_back(fail("cluster.no_measurement", "cluster",
                              "no pair of nodes produced a figure: every pair run failed or "
                              "measured 0 (" +
                                  std::to_string(ms.size()) + " pairs)",
                              "run `fabcheck pair " + hosts[ms[0].a] + " " + hosts[ms[0].b] +
                                  "` to see the failed step; check the launcher (--launcher) and "
                                  "that fabcheck is installed at --agent-path on every node"));
  }
  // Nodes: a node needs two pairs before "slow against every peer" means anything (one pair
  // cannot tell the node from the link).
  for (int i = 0; i < n && ref > 0; ++i) {
    auto& s = v.nodes[i];
    for (double x : rows[i])
      if (x < o.slow_fraction * ref) s.low++;
    if (s.measured < 2 || !s.score_gbit_s || *s.score_gbit_s >= o.slow_fraction * ref) continue;
    s.slow = true;
    std::string seen = std::to_string(s.low) + " of its " + std::to_string(s.measured) +
                       " pairs below " + std::to_string(static_cast<int>(o.slow_fraction * 100)) +
                       "% of the cluster's " + gbit(ref);
    if (s.failed == s.measured) {
      v.findings.push_back(fail("cluster.node_unreachable", s.host,
                                "every pair run with " + s.host + " failed (" +
                                    std::to_string(s.failed) + " pairs) while the other nodes " +
                                    "measure " + gbit(ref) + " among themselves",
                                "check the node's cluster interface (`ip link`, `fabcheck node` on "
                                "it); until fixed: " +
                                    drain_fix(s.host, "unreachable from every peer")));
    } else {
      v.findings.push_back(fail(
          "cluster.node_slow", s.host,
          s.host + " is slow against every peer: median " + gbit(*s.score_gbit_s) + ", " + seen,
          "check its NIC/HCA (`fabcheck node` on it: port rate, PCIe width, "
          "error counters) and cable; until fixed: " +
              drain_fix(s.host, "slow against every peer")));
    }
  }
  // Links between two healthy nodes.
  for (const auto& m : ms) {
    LinkVerdict l{m.a, m.b, std::nullopt, "ok"};
    const auto &na = v.nodes[m.a], &nb = v.nodes[m.b];
    std::string name = hosts[m.a] + "<->" + hosts[m.b];
    if (na.slow || nb.slow) {
      l.state = figure(m) < o.slow_fraction * ref || !m.ok ? "node" : "ok";
      v.links.push_back(l);
      continue;
    }
    if (na.score_gbit_s && nb.score_gbit_s)
      l.expected_gbit_s = std::min(*na.score_gbit_s, *nb.score_gbit_s);
    const double yardstick = l.expected_gbit_s.value_or(ref);
    const bool failed = !m.ok;
    const bool slow = m.ok && l.expected_gbit_s && figure(m) < o.slow_fraction * *l.expected_gbit_s;
    if (!failed && !slow) {
      v.links.push_back(l);
      continue;
    }
    std::string first =
        failed ? "failed (" + m.error + ")" : "measured " + gbit(figure(m)) + " (" + m.source + ")";
    if (m.retested && m.retest_ok && m.retest_gbit_s &&
        *m.retest_gbit_s >= o.slow_fraction * yardstick) {
      l.state = "flaky";
      v.findings.push_back(warn("cluster.link_flaky", name,
                                "the link " + name + " " + first + ", then " +
                                    gbit(*m.retest_gbit_s) +
                                    " when measured again (its nodes: " + gbit(yardstick) + ")",
                                "watch the error counters on both ends (`ethtool -S IFACE`, "
                                "`perfquery -x`) while re-running `fabcheck pair " +
                                    hosts[m.a] + " " + hosts[m.b] +
                                    "` a few times; a link that flaps under load needs "
                                    "its cable or transceiver replaced"));
      v.links.push_back(l);
      continue;
    }
    std::string again = !m.retested ? ""
                        : m.retest_ok
                            ? "; again " + gbit(m.retest_gbit_s.value_or(0)) + " when re-tested"
                            : "; failed again when re-tested";
    if (failed) {
      l.state = "failed";
      v.findings.push_back(fail("cluster.link_failed", name,
                                "the pair run " + name +
                                    " failed while both nodes work with other peers: " + m.error +
                                    again,
                                "re-run `fabcheck pair " + hosts[m.a] + " " + hosts[m.b] +
                                    "` for the detail; check the path between the two (switch "
                                    "ports, cables, firewall rules on either node)"));
    } else {
      l.state = "slow";
      v.findings.push_back(
          fail("cluster.link_slow", name,
               "one bad link: " + name + " " + first + " while " + hosts[m.a] + " and " +
                   hosts[m.b] + " measure " + gbit(*na.score_gbit_s) + " and " +
                   gbit(*nb.score_gbit_s) + " against their other peers" + again,
               "check the cable and switch ports between " + hosts[m.a] + " and " + hosts[m.b] +
                   " (error counters on both ends: `ethtool -S IFACE`, `perfquery`), reseat or "
                   "replace it; confirm with `fabcheck pair " +
                   hosts[m.a] + " " + hosts[m.b] + "`"));
    }
    v.links.push_back(l);
  }
  if (n >= 1 && n < 3 && !ms.empty())
    v.findings.push_back(info(
        "cluster.localisation_limited", "cluster",
        std::to_string(n) + " nodes: a slow node cannot be told from a bad "
                            "link (a node needs two peers to compare against); give 3 or more"));
  return v;
}

}  // namespace fabkit::slurm
