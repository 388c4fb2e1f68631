#include "slurm/cluster_judge.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/report_json.h"
#include "fabric/pair/verdict.h"
#include "slurm/drift_judge.h"
#include "slurm/link_search.h"
#include "slurm/path_judge.h"

namespace fabkit::slurm {
namespace {

std::string failed_step(const pair::PairFacts& f) {
  for (const auto& s : f.steps)
    if (s.status == "failed")
      return s.step + (s.host.empty() ? "" : " on " + s.host) + ": " + s.code + ": " + s.error;
  return "";
}

// Warn/fail findings of many runs, one finding per code: the first one's text, and the
// subjects (hosts or pairs) it was seen on.
void fold_findings(const std::vector<std::pair<std::string, const std::vector<Finding>*>>& sources,
                   std::vector<Finding>& out) {
  std::map<std::string, std::vector<std::pair<std::string, const Finding*>>> by_code;
  std::vector<std::string> order;
  for (const auto& [where, findings] : sources)
    for (const auto& f : *findings) {
      if (f.severity == Severity::kInfo) continue;
      if (!by_code.count(f.code)) order.push_back(f.code);
      by_code[f.code].push_back({where, &f});
    }
  for (const auto& code : order) {
    const auto& seen = by_code[code];
    Finding f = *seen.front().second;
    std::vector<std::string> wheres;
    for (const auto& [w, _] : seen)
      if (std::find(wheres.begin(), wheres.end(), w) == wheres.end()) wheres.push_back(w);
    f.subject = seen.front().first + ": " + f.subject;
    if (wheres.size() > 1) {
      std::string list;
      for (size_t i = 0; i < wheres.size() && i < 8; ++i) list += (i ? ", " : "") + wheres[i];
      if (wheres.size() > 8) list += " and " + std::to_string(wheres.size() - 8) + " more";
      f.message += " [seen on " + std::to_string(wheres.size()) + ": " + list + "]";
    }
    out.push_back(f);
  }
}

// The search's verdicts: each bad link (fail), bad node (fail) and flaky link (warn) it named, each
// pair that did not show again (warn), a search that stopped at its cap (warn), or a clean first
// stage (info).
void search_findings(const ClusterFacts& f, std::vector<Finding>& out) {
  const SearchFacts& s = f.search;
  if (!s.ran) return;
  const FabricSearchResult& r = s.result;
  char figures[320];
  std::snprintf(figures, sizeof figures,
                "%d rounds, %d group tests (bound %d; first stage in %d blocks; a full pair "
                "schedule over the %zu nodes: %d rounds); a bandwidth-bound group is slow below "
                "%.3g Gbit/s",
                r.rounds, r.group_tests, s.rounds_bound, r.blocks, s.candidates.size(),
                s.full_schedule_rounds, s.threshold_gbit_s.value_or(0));
  const std::string of_all =
      r.faults.size() > 1 ? " (one of " + std::to_string(r.faults.size()) + " faults named)" : "";
  auto host = [&](int i) { return f.hosts[static_cast<size_t>(i)]; };
  for (const auto& x : r.faults) {
    const std::string a = host(x.pair.a), b = host(x.pair.b);
    const std::string alone = "; the pair alone was slow in " + std::to_string(x.positives) +
                              " of " + std::to_string(x.repeats) + " tests";
    if (x.kind == "link") {
      out.push_back(fail("cluster.link_search_found", link_name(f, x.pair),
                         "group testing (ring all-reduces of node groups) named the bad link" +
                             of_all + ": " + figures + alone +
                             "; each end was fast with a node known healthy",
                         "check the cable, transceiver and switch ports between " + a + " and " +
                             b + " (`fabcheck pair " + a + " " + b +
                             "` shows the interface pairs); drain one of them until it is fixed"));
    } else if (x.kind == "node") {
      const std::string other = x.node == x.pair.a ? b : a;
      out.push_back(fail("cluster.link_search_bad_node", host(x.node),
                         "group testing narrowed to " + link_name(f, x.pair) + ", and " +
                             host(x.node) + " was slow with a node known healthy too, while " +
                             other + " was not: the node, not one link" + of_all + ": " + figures +
                             alone,
                         "run `fabcheck node` on " + host(x.node) +
                             " (NIC, PCIe, CPU load, port counters); drain it until it is fixed"));
    } else if (x.kind == "flaky_link") {
      out.push_back(
          warn("cluster.link_search_flaky", link_name(f, x.pair),
               "group testing named a link that comes and goes" + of_all + ": " + figures + alone,
               "watch the error counters on both ends (`ethtool -S`, `perfquery`) and "
               "re-seat or replace the cable; `fabcheck pair " +
                   a + " " + b + "` a few times"));
    } else {
      out.push_back(warn("cluster.link_search_not_reproduced", "search",
                         "the groups narrowed to " + link_name(f, x.pair) +
                             ", whose own tests were fast: a flaky link elsewhere in the group, "
                             "or load that came and went: " +
                             figures + alone,
                         "re-run fabcheck cluster --search; watch the port counters of the "
                         "nodes the rounds named"));
    }
  }
  if (r.stopped_at_cap)
    out.push_back(warn("cluster.link_search_stopped_at_cap", "search",
                       "the search stopped after " + std::to_string(r.faults.size()) +
                           " faults (--search-max-links): more may be left: " + figures,
                       "fix or drain what it named and run it again, or raise --search-max-links"));
  if (r.faults.empty())
    out.push_back(
        info("cluster.link_search_clean", "search",
             "every group of the first stage (each block, then each union of two blocks, every "
             "pair of nodes in one group, every ring order) was not slow: " +
                 std::string(figures)));
}

}  // namespace

std::string link_name(const ClusterFacts& f, const NodePair& p) {
  return f.hosts[static_cast<size_t>(p.a)] + "<->" + f.hosts[static_cast<size_t>(p.b)];
}

PairMeasurement measurement_from_pair(const PairRun& run) {
  const auto& f = run.facts;
  PairMeasurement m;
  m.a = run.a;
  m.b = run.b;
  if (!f.chosen_link) {
    m.error = failed_step(f);
    if (m.error.empty()) m.error = "no interface pair between the two hosts accepted a connection";
    return m;
  }
  const auto& link = f.links[*f.chosen_link];
  m.rtt_us = link.rtt_median_us;
  if (f.rdma_rc.status == "ran") {
    std::optional<double> worst;
    std::string reasons;
    for (const auto& p : f.rdma_rc.pairs) {
      if (p.status == "ok" && p.bw_gbps) {
        if (!worst || *p.bw_gbps < *worst) m.link_rate_gbit_s = p.ports.rate_gbps;
        worst = worst ? std::min(*worst, *p.bw_gbps) : *p.bw_gbps;
      } else
        reasons +=
            (reasons.empty() ? "" : "; ") + p.ports.hca_a + "<->" + p.ports.hca_b + ": " + p.reason;
    }
    if (!worst) {
      m.error = "rdma_rc: the RC test failed on every rail: " + reasons;
      return m;
    }
    m.ok = true;
    m.gbit_s = worst;
    m.source = "rdma_rc write_bw (slowest rail)";
    return m;
  }
  // EFA (or --ofi-provider): the libfabric RDM test measured the path NCCL's OFI plugin takes,
  // which the TCP figure of the ENA interface does not.
  if (f.ofi_rdm.status == "ran" && f.ofi_rdm.bandwidth_gbps) {
    m.ok = true;
    m.gbit_s = f.ofi_rdm.bandwidth_gbps;
    m.source = "ofi_rdm " + f.ofi_rdm.provider + " bandwidth";
    return m;
  }
  if (f.ofi_rdm.status == "failed") {
    m.error = "ofi_rdm (" + f.ofi_rdm.provider + "): " + f.ofi_rdm.reason;
    return m;
  }
  m.ok = true;
  m.gbit_s = link.single_stream_gbit_s;
  m.link_rate_gbit_s = pair::link_rate_gbit_s(link.a, link.b);
  m.source = "tcp single stream " + link.a.ifname + "->" + link.b.ifname;
  return m;
}

std::string nccl_version_of(const std::vector<PairRun>& runs, const std::string& host) {
  for (const auto& r : runs)
    for (const auto& t : r.facts.transports)
      for (size_t rank = 0; rank < t.ranks.size() && rank < 2; ++rank) {
        const std::string& h = rank == 0 ? r.facts.host_a : r.facts.host_b;
        const Json& doc = t.ranks[rank];
        if (h != host || !doc.is_object() || !doc.contains("extra") || !doc["extra"].is_object())
          continue;
        const Json& x = doc["extra"];
        if (x.contains("nccl_log") && x["nccl_log"].is_object() &&
            x["nccl_log"].contains("version") && x["nccl_log"]["version"].is_string())
          return x["nccl_log"]["version"].get<std::string>();
        if (x.contains("nccl_version") && x["nccl_version"].is_number_integer())
          return std::to_string(x["nccl_version"].get<long>());
      }
  return "";
}

std::vector<PairMeasurement> matrix_measurements(const ClusterFacts& f) {
  std::vector<PairMeasurement> ms;
  for (const auto& p : f.pairs) ms.push_back(measurement_from_pair(p));
  for (const auto& rt : f.retests) {
    PairMeasurement again = measurement_from_pair(rt);
    for (auto& m : ms)
      if (m.a == rt.a && m.b == rt.b) {
        m.retested = true;
        m.retest_ok = again.ok;
        m.retest_gbit_s = again.gbit_s;
      }
  }
  return ms;
}

ClusterJudgement judge_cluster(const ClusterFacts& f, const MatrixOptions& mo) {
  ClusterJudgement j;
  // 1. Node checks: the ones that failed to run, then the nodes' own findings by code.
  j.node_reports.resize(f.nodes.size());
  j.gpu_health.resize(f.nodes.size());
  std::vector<std::pair<std::string, const std::vector<Finding>*>> node_findings;
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const auto& n = f.nodes[i];
    if (!n.ok) {
      j.findings.push_back(
          fail("cluster.node_check_failed", n.host, n.error,
               "run `fabcheck node` on " + n.host +
                   " by hand; check that the "
                   "launcher reaches it and fabcheck is at the same path there (--agent-path)"));
      continue;
    }
    try {
      j.node_reports[i] = report_from_json(n.report);
      node_findings.push_back({n.host, &j.node_reports[i].findings});
    } catch (const std::invalid_argument& e) {
      j.findings.push_back(fail("cluster.node_check_failed", n.host,
                                "the node report from " + n.host + " is malformed: " + e.what(),
                                "install the same fabcheck version on every node"));
      continue;
    }
    j.gpu_health[i] = node_gpu_health(n.report, j.node_reports[i].findings);
    NodeDriftFacts d{n.host, drift_facts_from_node_report(n.report)};
    std::string nccl = nccl_version_of(f.pairs, n.host);
    if (!nccl.empty()) d.values["nccl_version"] = nccl;
    j.drift.push_back(std::move(d));
  }
  fold_findings(node_findings, j.findings);

  // 2. Pairs: the matrix judge, then the pair runs' own findings by code.
  j.measurements = matrix_measurements(f);
  std::vector<std::vector<Finding>> per_pair;
  per_pair.reserve(f.pairs.size());
  for (const auto& p : f.pairs)
    per_pair.push_back(pair::pair_findings(p.facts, pair::compute_verdict(p.facts)));
  std::vector<std::pair<std::string, const std::vector<Finding>*>> pair_findings;
  for (size_t i = 0; i < f.pairs.size(); ++i)
    pair_findings.push_back({link_name(f, {f.pairs[i].a, f.pairs[i].b}), &per_pair[i]});
  j.matrix = judge_matrix(f.hosts, j.measurements, mo);
  j.findings.insert(j.findings.end(), j.matrix.findings.begin(), j.matrix.findings.end());
  if (f.topology.spines > 0 &&
      (f.topology.leaf_of.empty() || f.topology.leaf_of.size() == f.hosts.size())) {
    auto paths = judge_spine_paths(f.hosts, f.topology, j.matrix);
    j.findings.insert(j.findings.end(), paths.findings.begin(), paths.findings.end());
  }
  fold_findings(pair_findings, j.findings);

  // 3. Drift between the node reports.
  auto d = judge_drift(j.drift);
  j.findings.insert(j.findings.end(), d.begin(), d.end());

  // 4. The bad-link search, when it ran.
  search_findings(f, j.findings);
  return j;
}

}  // namespace fabkit::slurm
