#include "slurm/matrix_judge.h"

#include <algorithm>
#include <cmath>
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

std::string percent(double fraction) {
  return std::to_string(static_cast<int>(fraction * 100 + 0.5)) + "%";
}

}  // namespace

double auto_noise_sigmas(int links, bool retest) {
  const double p = retest ? std::sqrt(0.01 / std::max(links, 1)) : 0.01 / std::max(links, 1);
  // The z with P(Z < -z) = p, by bisection on erfc (no inverse in <cmath>; 60 halvings of [0, 40]
  // are exact to double precision).
  double lo = 0, hi = 40;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > p ? lo : hi) = mid;
  }
  return std::max(3.0, (lo + hi) / 2);
}

std::optional<LinkSpread> link_spread(const std::vector<double>& log_ratios,
                                      const MatrixOptions& o) {
  if (o.noise_sigmas == 0 || static_cast<int>(log_ratios.size()) < std::max(o.noise_min_links, 2))
    return std::nullopt;
  LinkSpread s;
  s.links = static_cast<int>(log_ratios.size());
  s.sigmas = o.noise_sigmas > 0 ? o.noise_sigmas : auto_noise_sigmas(s.links, o.retest);
  s.center = median(log_ratios);
  std::vector<double> dev;
  dev.reserve(log_ratios.size());
  for (double x : log_ratios) dev.push_back(std::fabs(x - s.center));
  s.sigma = 1.4826 * median(dev);
  s.noise_bar = std::exp(s.center - s.sigmas * s.sigma);
  return s;
}

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

namespace {

// The bar for links (v.link_fraction): slow_fraction, or lower where the healthy links' own noise
// reaches, said in a warning when it is lower by a tenth or more. Needs the nodes judged (a slow
// node's links are not noise).
void set_link_bar(const std::vector<PairMeasurement>& ms, const MatrixOptions& o,
                  MatrixVerdict& v) {
  v.link_fraction = o.slow_fraction;
  std::vector<double> log_ratios;
  for (const auto& m : ms) {
    const auto &na = v.nodes[m.a], &nb = v.nodes[m.b];
    if (na.slow || nb.slow || !na.score_gbit_s || !nb.score_gbit_s || figure(m) <= 0) continue;
    const double expected = std::min(*na.score_gbit_s, *nb.score_gbit_s);
    if (expected > 0) log_ratios.push_back(std::log(figure(m) / expected));
  }
  v.link_spread = link_spread(log_ratios, o);
  if (v.link_spread && v.link_spread->noise_bar < o.slow_fraction) {
    const auto& s = *v.link_spread;
    v.link_fraction = s.noise_bar;
    // A bar a few points under slow_fraction changes little; the warning is for one that does.
    if (s.noise_bar >= 0.9 * o.slow_fraction) return;
    char spread[160];
    std::snprintf(
        spread, sizeof spread,
        "a robust spread of x%.2f (sigma %.2f of its logarithm); %.1f sigma below the median is ",
        std::exp(s.sigma), s.sigma, s.sigmas);
    v.findings.push_back(warn(
        "cluster.link_spread_wide", "cluster",
        "the pair figures between healthy nodes spread widely: over " + std::to_string(s.links) +
            " links, a link's figure against the lower of its two nodes' scores has " + spread +
            percent(s.noise_bar) + " of the nodes' figure. A link is called slow only below " +
            percent(s.noise_bar) + ", not below --slow-fraction's " + percent(o.slow_fraction) +
            ": a link between the two goes unnamed on this run",
        "when the nodes share CPUs or the network carries other jobs, measure with fewer pair runs "
        "at once (--max-parallel) or at a quiet time; on a dedicated fabric a spread this wide is "
        "worth a look of its own (congestion, ECMP collisions, a throttled NIC): run "
        "`fabcheck pair A B` a few times on two healthy nodes"));
  }
}

}  // namespace

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
  set_link_bar(ms, o, v);
  const double link_fraction = v.link_fraction;
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
    const bool slow = m.ok && l.expected_gbit_s && figure(m) < link_fraction * *l.expected_gbit_s;
    if (!failed && !slow) {
      v.links.push_back(l);
      continue;
    }
    std::string first =
        failed ? "failed (" + m.error + ")" : "measured " + gbit(figure(m)) + " (" + m.source + ")";
    if (m.retested && m.retest_ok && m.retest_gbit_s &&
        *m.retest_gbit_s >= link_fraction * yardstick) {
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
