#include "reports/html/html_report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/latency_histogram.h"

namespace fabkit::reports::html {
namespace {

Json load(const std::string& rel) {
  std::ifstream f(std::string(FABKIT_FIXTURES) + "/" + rel);
  return Json::parse(f);
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

Json finding(const char* sev, const char* code, const char* msg) {
  return {
      {"severity", sev}, {"code", code}, {"subject", "eth0"}, {"message", msg}, {"fix", "do x"}};
}

TEST(FindingsTable, WorstFirstAndEscaped) {
  Json fs = Json::array(
      {finding("info", "a.info", "fine"), finding("fail", "b.fail", "<script>x</script>")});
  std::string h = findings_table(fs);
  EXPECT_LT(h.find("b.fail"), h.find("a.info"));
  EXPECT_EQ(h.find("<script>"), std::string::npos);
  EXPECT_NE(h.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(count(h, "<tr class=\"finding"), 2);
  EXPECT_NE(findings_table(Json::array()).find("no findings"), std::string::npos);
}

TEST(IecBytes, TableUnits) {
  EXPECT_EQ(iec_bytes(262144), "256 KiB");
  EXPECT_EQ(iec_bytes(8388608), "8 MiB");
  EXPECT_EQ(iec_bytes(8), "8 B");
}

TEST(FindingsTable, BadSeverityNamesTheField) {
  Json fs = Json::array({finding("bad", "x.y", "m")});
  try {
    findings_table(fs);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("findings[0].severity"), std::string::npos) << e.what();
  }
}

TEST(PairSection, OneBusbwChartPerMeasuredTransportWithLinkRateAndBand) {
  Json doc = load("reports/pair-netns-veth.json");
  std::string h = pair_section(doc);
  int measured = 0;
  for (const auto& t : doc["pair"]["transports"]) {
    if (t["sizes"].empty()) continue;
    ++measured;
    EXPECT_NE(h.find("busbw vs message size — " + t["transport"].get<std::string>()),
              std::string::npos);
  }
  EXPECT_EQ(measured, 3);
  EXPECT_EQ(count(h, "aria-label=\"busbw vs message size"), measured);
  // The veth link reports 10000 Mb/s: 10 Gbit/s = 1.25 GB/s.
  EXPECT_EQ(count(h, "data-name=\"link rate 10 Gbit/s\""), measured);
  EXPECT_EQ(count(h, "data-name=\"expected 80–95% of link\""), measured);
  EXPECT_NE(h.find("all-reduce time per message size"), std::string::npos);
}

TEST(PairSection, MalformedSizeNamesTheField) {
  Json doc = load("reports/pair-netns-veth.json");
  doc["pair"]["transports"][0]["sizes"][1]["busbw_gbps"] = "fast";
  try {
    pair_section(doc);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("pair.transports[0].sizes[1].busbw_gbps"),
              std::string::npos)
        << e.what();
  }
}

TEST(PairSection, RdmaRcPairsWithBandwidthAgainstThePortRate) {
  Json doc = load("reports/pair-netns-veth.json");
  doc["pair"]["rdma_rc"] = {
      {"status", "ran"},
      {"pairs", Json::array({{{"rail", "10.0.3.0/24"},
                              {"a", {{"hca", "mlx5_0"}, {"port", 1}, {"gid_index", 3}}},
                              {"b", {{"hca", "mlx5_4"}, {"port", 1}, {"gid_index", 3}}},
                              {"link_layer", "Ethernet"},
                              {"rate_gbps", 200},
                              {"status", "ok"},
                              {"bw_gbps", 180.0},
                              {"lat_us_median", 2.5},
                              {"lat_us_p99", 3.25}}})}};
  std::string h = pair_section(doc);
  EXPECT_NE(h.find("<td>mlx5_0:1</td><td>mlx5_4:1</td><td>Ethernet</td><td>ok</td>"
                   "<td class=\"num\">180</td><td class=\"num\">200</td><td class=\"num\">90%</td>"
                   "<td class=\"num\">2.5 / 3.25</td>"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("no RDMA send-latency samples in this report"), std::string::npos);
  LatencyHistogram lat;
  for (int i = 0; i < 1000; ++i) lat.add(2.0 + (i % 50) * 0.03);
  doc["pair"]["rdma_rc"]["pairs"][0]["lat_histogram"] = to_json(lat);
  h = pair_section(doc);
  EXPECT_NE(h.find("aria-label=\"RDMA SEND latency, rail 10.0.3.0/24 (mlx5_0:1 → mlx5_4:1)\" "
                   "data-samples=\"1000\""),
            std::string::npos);
  EXPECT_NE(h.find("data-name=\"median 2.5 µs\""), std::string::npos);
  doc["pair"]["rdma_rc"]["pairs"][0]["lat_histogram"]["unit"] = "ns";
  EXPECT_THROW(pair_section(doc), std::invalid_argument);
  doc["pair"]["rdma_rc"] = {{"status", "unavailable"}, {"reason", "no ACTIVE HCA port"}};
  EXPECT_NE(pair_section(doc).find("RDMA RC test: unavailable — no ACTIVE HCA port"),
            std::string::npos);
}

TEST(PairSection, LibfabricRdmFiguresStandBesideTheTcpFigure) {
  Json doc = load("reports/pair-netns-veth.json");
  EXPECT_EQ(pair_section(doc).find("libfabric RDM"), std::string::npos);  // a report before it
  doc["pair"]["ofi_rdm"] = {{"status", "ran"},          {"provider", "tcp"},
                            {"bandwidth_gbps", 3.0},   {"latency_us", 83.5},
                            {"tcp_gbps", 13.0},        {"ratio_to_tcp", 0.23}};
  EXPECT_NE(pair_section(doc).find("libfabric RDM point-to-point (tcp): 3 Gbit/s, latency 83.5 µs "
                                   "(8 B, half round trip); TCP on the same pair 13 Gbit/s (0.23×)"),
            std::string::npos)
      << pair_section(doc);
  doc["pair"]["ofi_rdm"] = {{"status", "skipped"}, {"provider", nullptr},
                            {"reason", "no EFA devices on h0"}};
  EXPECT_NE(pair_section(doc).find("libfabric RDM point-to-point: skipped — no EFA devices on h0"),
            std::string::npos);
  doc["pair"]["ofi_rdm"]["reason"] = 7;
  EXPECT_THROW(pair_section(doc), std::invalid_argument);
}

TEST(ClusterSection, HeatMapHasACellPerHostPair) {
  Json doc = load("reports/cluster-4-hosts.json");
  std::string h = cluster_section(doc);
  EXPECT_EQ(count(h, "class=\"cell\""), 16);
  // node02-node04 measured 47.9 Gbit/s: drawn in both cells.
  EXPECT_EQ(count(h, "node02 ↔ node04: 47.9 Gbit/s"), 1);
  EXPECT_EQ(count(h, "node04 ↔ node02: 47.9 Gbit/s"), 1);
  doc["cluster"]["matrix"]["pairs"][0]["b"] = "nodeX";
  EXPECT_THROW(cluster_section(doc), std::invalid_argument);
}

// A pair document whose links carry histograms of the given samples (the second link chosen).
Json pair_with_histograms(const std::vector<std::vector<double>>& per_link) {
  Json links = Json::array();
  for (size_t i = 0; i < per_link.size(); ++i) {
    LatencyHistogram h;
    for (double us : per_link[i]) h.add(us);
    std::string n = std::to_string(i);
    links.push_back({{"a", {{"ifname", "eth" + n}, {"addr", "10.0." + n + ".1"}}},
                     {"b", {{"ifname", "eth" + n}, {"addr", "10.0." + n + ".2"}}},
                     {"chosen", i == 1},
                     {"status", "open"},
                     {"rtt_median_us", per_link[i][0]},
                     {"rtt_p99_us", per_link[i].back()},
                     {"pings", per_link[i].size()},
                     {"rtt_histogram", to_json(h)}});
  }
  return {{"findings", Json::array()}, {"pair", {{"links", links}}}};
}

TEST(PairSection, RoundTripHistogramPerLinkChosenFirstWithMedianAndP99) {
  std::string h = pair_section(pair_with_histograms({{50, 60, 70, 900}, {20, 21, 22, 30, 35}}));
  size_t chosen = h.find("aria-label=\"round trip eth1 10.0.1.1 → eth1 10.0.1.2 (chosen)\"");
  size_t other = h.find("aria-label=\"round trip eth0 10.0.0.1 → eth0 10.0.0.2\"");
  ASSERT_NE(chosen, std::string::npos);
  ASSERT_NE(other, std::string::npos);
  EXPECT_LT(chosen, other);
  EXPECT_NE(h.find("data-samples=\"5\" data-overflow=\"0\""), std::string::npos);
  EXPECT_NE(h.find("data-name=\"median 20 µs\""), std::string::npos);
  EXPECT_NE(h.find("data-name=\"p99 35 µs\""), std::string::npos);
  EXPECT_EQ(h.find("no latency samples"), std::string::npos);
}

TEST(PairSection, ReportWithoutHistogramsSaysSo) {
  Json doc = pair_with_histograms({{50, 60}});
  doc["pair"]["links"][0].erase("rtt_histogram");  // a report written before histograms existed
  std::string h = pair_section(doc);
  EXPECT_NE(h.find("no latency samples in this report"), std::string::npos);
  EXPECT_EQ(count(h, "class=\"chart histogram\""), 0);
}

TEST(PairSection, HistogramThatDoesNotAddUpNamesTheField) {
  Json doc = pair_with_histograms({{50, 60, 70}});
  doc["pair"]["links"][0]["pings"] = 4;
  try {
    pair_section(doc);
    FAIL() << "a histogram of 3 samples accepted for 4 pings";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "pair.links[0].rtt_histogram.counts: the counts and overflow sum to 3"),
              std::string::npos)
        << e.what();
  }
}

TEST(ClusterSection, ChosenLinksMergedIntoOneHistogramAndMediansListed) {
  Json doc = load("reports/cluster-4-hosts.json");
  std::string before = cluster_section(doc);  // hand-written before histograms: still renders
  EXPECT_NE(before.find("no latency samples in this report"), std::string::npos);
  EXPECT_NE(before.find("<table class=\"rtt-pairs\">"), std::string::npos);  // its rtt_us medians
  Json& pairs = doc["cluster"]["matrix"]["pairs"];
  uint64_t total = 0;
  for (size_t i = 0; i < 2; ++i) {
    LatencyHistogram h;
    for (int k = 0; k < 10; ++k) h.add(8.0 + k * (i + 1));
    total += h.total();
    pairs[i]["rtt_histogram"] = to_json(h);
  }
  std::string after = cluster_section(doc);
  EXPECT_EQ(count(after, "class=\"chart histogram\""), 1);
  EXPECT_NE(after.find("round trip, chosen links of 2 pairs merged"), std::string::npos);
  EXPECT_NE(after.find("data-samples=\"" + std::to_string(total) + "\""), std::string::npos);
  EXPECT_NE(after.find("data-name=\"median in "), std::string::npos);
  EXPECT_EQ(after.find("no latency samples"), std::string::npos);
  pairs[0]["rtt_histogram"]["counts"][0] = -1;
  EXPECT_THROW(cluster_section(doc), std::invalid_argument);
}

TEST(MetricsSection, LossAndTokensCurves) {
  std::vector<Json> recs;
  for (int s = 1; s <= 5; ++s)
    recs.push_back({{"step", s}, {"loss", 3.0 - s * 0.1}, {"tokens_per_s", 100.0 * s}});
  recs.push_back({{"step", 5}, {"valid_loss", 2.8}});
  std::string h = metrics_section(recs);
  EXPECT_NE(h.find("aria-label=\"loss per step\""), std::string::npos);
  EXPECT_NE(h.find("aria-label=\"throughput per step\""), std::string::npos);
  EXPECT_NE(h.find("data-name=\"valid loss\""), std::string::npos);
  EXPECT_EQ(count(h, "<circle"), 11);  // 5 loss + 1 valid + 5 tokens/s
  EXPECT_NE(h.find("5 training steps"), std::string::npos);
}

TEST(RenderHtml, SelfContainedPageNamingTheInputOnError) {
  InputDocument node{"node.json", InputKind::kNodeReport, load("profile/node-gpu-ib-01.json"), {}};
  std::string page = render_html({node}, "2026-11-25T00:00:00Z");
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(page.find("mlx5_2"), std::string::npos);  // the DOWN port is listed
  node.doc["findings"][0]["severity"] = 3;
  try {
    render_html({node}, "x");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("node.json: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace fabkit::reports::html
