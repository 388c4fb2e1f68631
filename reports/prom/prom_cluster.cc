// The key figures of a `fabcheck cluster` report as Prometheus gauges: per node (its check, the
// matrix score, slow or not) and per pair (bandwidth figure, RTT, link rate, its verdict), so a
// periodic cluster check can alert on the one bad link and graph every link over time.
#include <stdexcept>

#include "reports/prom/prom_fields.h"
#include "reports/prom/prom_text.h"

namespace fabkit::reports::prom {

std::vector<Family> cluster_families(const Json& r) {
  const Json& c = member(r, "cluster");
  if (!c.is_object())
    throw std::invalid_argument(member(r, "plan").is_object()
                                    ? "a --plan-only report has no measured figures"
                                    : "cluster: missing or not an object");
  Family check{"fabkit_cluster_node_check_ok",
               "1 when the node's fabcheck node ran and its report came back",
               "gauge",
               {}};
  Family slow{"fabkit_cluster_node_slow",
              "1 when most of the node's pairs are slow (the matrix names the node, not a link)",
              "gauge",
              {}};
  Family score{"fabkit_cluster_node_score_bytes_per_second",
               "upper median of the node's pair figures (failed pairs count as 0)",
               "gauge",
               {}};
  const Json& nodes = member(c, "nodes");
  if (!nodes.is_array()) throw std::invalid_argument("cluster.nodes must be an array");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string w = "cluster.nodes[" + std::to_string(i) + "]";
    const Labels l = {{"host", string_or(nodes[i], "host", "?")}};
    check.samples.push_back({l, string_or(nodes[i], "check", "") == "ok" ? 1.0 : 0.0});
    slow.samples.push_back({l, member(nodes[i], "slow") == true ? 1.0 : 0.0});
    if (auto v = number(nodes[i], "score_gbit_s", w)) score.samples.push_back({l, *v * 1e9 / 8});
  }

  Family ok{"fabkit_cluster_pair_ok", "1 when the pair run produced a figure", "gauge", {}};
  Family state{"fabkit_cluster_pair_state",
               "1 for the matrix's verdict on the pair: ok, slow, failed, flaky or node",
               "gauge",
               {}};
  Family bw{
      "fabkit_cluster_pair_bandwidth_bytes_per_second",
      "the pair's figure: RDMA RC write bandwidth of the slowest rail, else single-stream TCP",
      "gauge",
      {}};
  Family rtt{"fabkit_cluster_pair_rtt_seconds",
             "median round trip of the pair's chosen interface pair",
             "gauge",
             {}};
  Family rate{"fabkit_cluster_pair_link_rate_bytes_per_second",
              "what the pair's figure can reach (port rate or interface speed)",
              "gauge",
              {}};
  const Json& m = member(c, "matrix");
  const Json& pairs = member(m, "pairs");
  if (!pairs.is_array()) throw std::invalid_argument("cluster.matrix.pairs must be an array");
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::string w = "cluster.matrix.pairs[" + std::to_string(i) + "]";
    const Labels l = {{"host_a", string_or(pairs[i], "a", "?")},
                      {"host_b", string_or(pairs[i], "b", "?")}};
    ok.samples.push_back({l, member(pairs[i], "ok") == true ? 1.0 : 0.0});
    Labels ls = l;
    ls.push_back({"state", string_or(pairs[i], "state", "unknown")});
    state.samples.push_back({ls, 1.0});
    if (auto v = number(pairs[i], "gbit_s", w)) bw.samples.push_back({l, *v * 1e9 / 8});
    if (auto v = number(pairs[i], "rtt_us", w)) rtt.samples.push_back({l, *v * 1e-6});
    if (auto v = number(pairs[i], "link_rate_gbit_s", w)) rate.samples.push_back({l, *v * 1e9 / 8});
  }
  Family ref{"fabkit_cluster_reference_bytes_per_second",
             "the matrix's yardstick: the median of the node scores",
             "gauge",
             {}};
  if (auto v = number(m, "reference_gbit_s", "cluster.matrix"))
    ref.samples.push_back({{}, *v * 1e9 / 8});

  std::vector<Family> out{findings_family("fabkit_cluster_findings", r)};
  for (auto* f : {&check, &slow, &score, &ok, &state, &bw, &rtt, &rate, &ref}) out.push_back(*f);
  return out;
}

Family cluster_check_timestamp(double unix_time_s) {
  return {"fabkit_cluster_check_timestamp_seconds",
          "When fabcheck cluster finished (Unix time)",
          "gauge",
          {{{}, unix_time_s}}};
}

}  // namespace fabkit::reports::prom
