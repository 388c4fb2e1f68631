#include "reports/baseline/pair_baseline.h"

#include <gtest/gtest.h>

#include <regex>

namespace fabkit::reports::baseline {
namespace {

// A pair report with one transport: busbw per size (bytes -> GB/s), peak and link rate.
Json pair_doc(const std::string& transport, const std::vector<std::pair<int64_t, double>>& sizes,
              std::optional<double> rate_gbit_s = std::nullopt, const std::string& status = "ok") {
  Json s = Json::array();
  double peak = 0;
  for (auto [b, bw] : sizes) {
    s.push_back({{"bytes", b},
                 {"time_us", 1.0},
                 {"algbw_gbps", bw},
                 {"busbw_gbps", bw},
                 {"correct", true}});
    peak = std::max(peak, bw);
  }
  Json t = {{"transport", transport},
            {"status", status},
            {"reason", ""},
            {"peak_busbw_gbps", peak},
            {"link_rate_gbit_s", rate_gbit_s ? Json(*rate_gbit_s) : Json()},
            {"sizes", s}};
  return {{"schema_version", 1},
          {"kind", "pair"},
          {"findings", Json::array()},
          {"pair", {{"transports", Json::array({t})}}}};
}

std::vector<std::string> codes(const BaselineResult& r) {
  std::vector<std::string> c;
  for (const auto& f : r.findings) c.push_back(f.code);
  return c;
}

const std::vector<std::pair<int64_t, double>> kOld = {
    {4096, 0.5}, {1 << 20, 10.0}, {16 << 20, 20.0}};

TEST(PairBaseline, SameFiguresNoFindings) {
  auto r = compare_pair_baseline(pair_doc("nccl-ib", kOld), pair_doc("nccl-ib", kOld), {});
  EXPECT_TRUE(r.findings.empty());
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_FALSE(r.rows[0].judged);  // 4 KiB < 1 MiB: shown, not judged
  EXPECT_TRUE(r.rows[2].judged);
}

TEST(PairBaseline, RegressionBeyondThresholdFailsWithFiguresSideBySide) {
  auto now = pair_doc("nccl-ib", {{4096, 0.1}, {1 << 20, 9.5}, {16 << 20, 15.0}});
  auto r = compare_pair_baseline(pair_doc("nccl-ib", kOld), now, {});
  ASSERT_EQ(codes(r), std::vector<std::string>{"baseline.busbw_regression"});
  EXPECT_EQ(r.findings[0].severity, Severity::kFail);
  EXPECT_EQ(r.findings[0].subject, "nccl-ib");
  // 1 MiB fell 5% (within 10%), 4 KiB 80% (not judged), 16 MiB 25%: only 16 MiB is named.
  EXPECT_NE(r.findings[0].message.find("at 1 of 2 judged sizes: 16 MiB 20 → 15 GB/s (-25.0%)"),
            std::string::npos)
      << r.findings[0].message;
  EXPECT_TRUE(r.rows[2].regressed);
  EXPECT_FALSE(r.rows[1].regressed);
  EXPECT_FALSE(r.rows[0].regressed);
  // A looser threshold lets the same figures pass; a lower min_bytes judges 4 KiB too.
  BaselineOptions loose;
  loose.regression_pct = 30;
  EXPECT_TRUE(compare_pair_baseline(pair_doc("nccl-ib", kOld), now, loose).findings.empty());
  BaselineOptions all;
  all.min_bytes = 0;
  auto r2 = compare_pair_baseline(pair_doc("nccl-ib", kOld), now, all);
  EXPECT_NE(r2.findings[0].message.find("at 2 of 3 judged sizes: 4 KiB"), std::string::npos);
}

TEST(PairBaseline, LostTransportFails) {
  auto r =
      compare_pair_baseline(pair_doc("nccl-ib", kOld), pair_doc("nccl-ib", {}, {}, "failed"), {});
  ASSERT_EQ(codes(r), std::vector<std::string>{"baseline.transport_lost"});
  EXPECT_NE(r.findings[0].message.find("is 'failed' in the new run"), std::string::npos);
  auto r2 = compare_pair_baseline(pair_doc("nccl-ib", kOld), pair_doc("gloo-tcp", kOld), {});
  EXPECT_EQ(codes(r2),
            (std::vector<std::string>{"baseline.transport_lost", "baseline.transport_new"}));
}

TEST(PairBaseline, ExpectedFractionOfLinkRate) {
  // Peak 20 GB/s = 160 Gbit/s on a 200 Gbit/s port: 80% < 90% -> warn; on 170 Gbit/s: 94% -> fine.
  auto r =
      compare_pair_baseline(pair_doc("nccl-ib", kOld, 200.0), pair_doc("nccl-ib", kOld, 200.0), {});
  ASSERT_EQ(codes(r), std::vector<std::string>{"baseline.below_link_rate"});
  EXPECT_EQ(r.findings[0].severity, Severity::kWarn);
  EXPECT_NE(
      r.findings[0].message.find("160 Gbit/s is 80% of the 200 Gbit/s link rate; expected ≥ 90%"),
      std::string::npos)
      << r.findings[0].message;
  ASSERT_EQ(r.expected.size(), 1u);
  EXPECT_DOUBLE_EQ(r.expected[0].link_fraction, 0.8);
  EXPECT_TRUE(
      compare_pair_baseline(pair_doc("nccl-ib", kOld, 170.0), pair_doc("nccl-ib", kOld, 170.0), {})
          .findings.empty());
  BaselineOptions off;
  off.expect_link_fraction = 0;
  EXPECT_TRUE(
      compare_pair_baseline(pair_doc("nccl-ib", kOld, 200.0), pair_doc("nccl-ib", kOld, 200.0), off)
          .findings.empty());
  // Unknown rate: nothing to compare with, no finding.
  EXPECT_TRUE(compare_pair_baseline(pair_doc("x", kOld), pair_doc("x", kOld), {}).expected.empty());
}

TEST(PairBaseline, NotAPairReportNamesWhich) {
  Json node = {{"kind", "node"}, {"findings", Json::array()}};
  try {
    compare_pair_baseline(pair_doc("a", kOld), node, {});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("new: not a pair report", 0), 0u) << e.what();
  }
  Json bad = pair_doc("a", kOld);
  bad["pair"]["transports"][0]["sizes"][0]["busbw_gbps"] = "fast";
  try {
    compare_pair_baseline(bad, pair_doc("a", kOld), {});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("old: pair.transports[0].sizes[0].busbw_gbps"),
              std::string::npos);
  }
}

TEST(PairBaseline, JsonAndTextCarryTheRows) {
  auto now = pair_doc("nccl-ib", {{4096, 0.5}, {1 << 20, 10.0}, {16 << 20, 15.0}});
  BaselineOptions o;
  auto r = compare_pair_baseline(pair_doc("nccl-ib", kOld), now, o);
  Json j = baseline_to_json(r, o, "old.json", "new.json");
  EXPECT_EQ(j["baseline_version"], 1);
  EXPECT_EQ(j["sizes"][2]["regressed"], true);
  EXPECT_DOUBLE_EQ(j["sizes"][2]["change_pct"].get<double>(), -25.0);
  std::string t = baseline_table_text(r, o);
  EXPECT_TRUE(std::regex_search(t, std::regex("16 MiB +20\\.000 +15\\.000 +-25\\.0% +REGRESSED\n")))
      << t;
}

}  // namespace
}  // namespace fabkit::reports::baseline
