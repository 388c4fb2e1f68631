// Aligned tables and the per-kind text sections built on them.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "reports/report_render.h"
#include "reports/text/control_text.h"
#include "reports/text/table.h"

namespace fabkit::reports {
namespace {

using text::Align;
using text::display_width;
using text::render_job_list;
using text::Table;

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(TextTable, ColumnsAlignWhateverTheCellWidths) {
  Table t({{"host"}, {"Gbit/s", Align::kRight}, {"state"}});
  t.add_row({"n1", "9.5", "ok"});
  t.add_row({"a-much-longer-host", "123.25", "SLOW"});
  std::ostringstream out;
  t.render(out);
  auto l = lines(out.str());
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0], "  host                Gbit/s  state");
  EXPECT_EQ(l[1], "  n1                     9.5  ok");
  EXPECT_EQ(l[2], "  a-much-longer-host  123.25  SLOW");
}

TEST(TextTable, ColorAndUtf8DoNotCountAsWidth) {
  EXPECT_EQ(display_width("\033[1;31mFAIL\033[0m"), 4u);
  EXPECT_EQ(display_width("n0<->n1 — ok"), 12u);
  Table t({{"a"}, {"b"}});
  t.add_row({"\033[1;31mFAIL\033[0m", "x"});
  t.add_row({"ok", "y"});
  std::ostringstream out;
  t.render(out, "");
  auto l = lines(out.str());
  EXPECT_EQ(l[1], "\033[1;31mFAIL\033[0m  x");
  EXPECT_EQ(l[2], "ok    y");
}

TEST(TextTable, ShortRowsPadAndLongRowsAreABug) {
  Table t({{"a"}, {"b"}});
  t.add_row({"1"});
  EXPECT_THROW(t.add_row({"1", "2", "3"}), std::invalid_argument);
  std::ostringstream out;
  t.render(out, "");
  EXPECT_EQ(lines(out.str()).at(1), "1");  // no trailing blanks
}

// The real pair report of a netns run (tests/fixtures/reports) renders its links and transports
// as aligned tables: every row of a table has its figures end in the same column.
TEST(TextTable, PairReportTablesAreAligned) {
  std::ifstream in(std::string(FABKIT_FIXTURES) + "/reports/pair-netns-veth.json");
  ASSERT_TRUE(in) << "fixture missing";
  Report r = report_from_json(Json::parse(in));
  std::ostringstream out;
  render_text(r, out, false);
  auto l = lines(out.str());
  size_t header = 0;
  for (size_t i = 0; i < l.size(); ++i)
    if (l[i].find("rtt_p50_us") != std::string::npos) header = i;
  ASSERT_NE(header, 0u) << out.str();
  const size_t end = l[header].find("rtt_p50_us") + std::string("rtt_p50_us").size();
  size_t rows = 0;
  for (size_t i = header + 1; i < l.size() && !l[i].empty(); ++i, ++rows) {
    ASSERT_GE(l[i].size(), end) << l[i];
    EXPECT_NE(l[i][end - 1], ' ') << "rtt column not right-aligned: " << l[i];
    EXPECT_EQ(l[i][end], ' ') << l[i];
  }
  EXPECT_GT(rows, 0u);
}

TEST(TextTable, OneLinePerFindingWithItsFixWorstFirst) {
  Report r{"node",
           "h",
           "t",
           {info("y.info", "s3", "m3"), warn("w.code", "s2", "m2", "f2"),
            fail("x.failure", "s1", "m1", "f1")},
           {}};
  std::ostringstream out;
  render_text(r, out, false);
  auto l = lines(out.str());
  std::vector<std::string> rows;
  for (const auto& x : l)
    if (x.rfind("  FAIL", 0) == 0 || x.rfind("  WARN", 0) == 0 || x.rfind("  INFO", 0) == 0)
      rows.push_back(x);
  ASSERT_EQ(rows.size(), 3u) << out.str();
  EXPECT_EQ(rows[0], "  FAIL      x.failure  s1: m1; fix: f1");
  EXPECT_EQ(rows[1], "  WARN      w.code     s2: m2; fix: f2");
  EXPECT_EQ(rows[2], "  INFO      y.info     s3: m3");
}

TEST(TextTable, ControlJobListIsAlignedAndHintsAtStaleEndpoints) {
  Json jobs = Json::array({{{"job", "run-long-name"},
                            {"state", "running"},
                            {"pid", 4242},
                            {"output_dir", "/o/1"},
                            {"status",
                             {{"step", 3},
                              {"total_steps", 10},
                              {"loss", 1.0},
                              {"tokens_per_s", 3000.0},
                              {"eta", "12s"},
                              {"phase", "training"},
                              {"pending", "none"}}}},
                           {{"job", "r2"},
                            {"state", "stale"},
                            {"pid", 7},
                            {"output_dir", "/o/2"},
                            {"status", nullptr}}});
  auto l = lines(render_job_list(jobs));
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0], "JOB            STATE     PID  OUTPUT  STATUS");
  EXPECT_EQ(l[1],
            "run-long-name  running  4242  /o/1    step 3/10  loss 1.0000  tokens/s 3000  ETA 12s  "
            "(training, pending none)");
  EXPECT_EQ(l[2], "r2             stale       7  /o/2");
  EXPECT_NE(l[3].find("fabtrain control cleanup"), std::string::npos);
  EXPECT_EQ(render_job_list(Json::array({jobs[0]})).find("cleanup"), std::string::npos);
}

// A node report's facts before its findings, from the golden of a real `fabcheck node --sysroot`
// run (tests/golden/expected): one aligned row per RDMA port and per interface, NCCL's pick.
TEST(TextTable, NodeFactsFromARealNodeReport) {
  std::ifstream in(std::string(FABKIT_FIXTURES) + "/../golden/expected/node-sysroot-ib-roce.json");
  ASSERT_TRUE(in) << "golden missing";
  Report r = report_from_json(Json::parse(in)["output"]);
  std::ostringstream out;
  render_text(r, out, false);
  const std::string t = out.str();
  auto l = lines(t);
  auto row = [&](const std::string& start) {
    for (const auto& x : l)
      if (x.rfind(start, 0) == 0) return x;
    return std::string();
  };
  const std::string header = row("  port ");
  ASSERT_FALSE(header.empty()) << t;
  const std::string ib = row("  mlx5_0:1 "), roce = row("  mlx5_2:1 ");
  ASSERT_FALSE(ib.empty()) << t;
  ASSERT_FALSE(roce.empty()) << t;
  // rate_Gb/s is right-aligned: both rows end their rate where the header ends the column name.
  const size_t rate_end = header.find("rate_Gb/s") + std::string("rate_Gb/s").size();
  EXPECT_EQ(ib.substr(rate_end - 3, 3), "200") << ib;
  EXPECT_EQ(roce.substr(rate_end - 3, 3), "100") << roce;
  EXPECT_NE(ib.find("ACTIVE  LinkUp  InfiniBand"), std::string::npos) << ib;
  EXPECT_NE(t.find("interfaces (NCCL would use: ens1f0np0; fabcheck recommends: ens1f0np0)"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("limits: memlock soft 8 MiB, hard 8 MiB; /dev/shm 64 MiB"), std::string::npos);
  EXPECT_NE(t.find("GPUs: 0 (not queried under --sysroot)"), std::string::npos);
  // The facts come before the findings.
  EXPECT_LT(t.find("RDMA ports"), t.find("\nfindings\n"));
}

// A RoCE port whose netdev is in another network namespace says so in its row (issue 37).
TEST(TextTable, NetdevInAnotherNamespaceIsMarked) {
  std::ifstream in(std::string(FABKIT_FIXTURES) + "/../golden/expected/node-sysroot-ib-roce.json");
  ASSERT_TRUE(in) << "golden missing";
  Json doc = Json::parse(in)["output"];
  doc["rdma"]["devices"][1]["ports"][0]["netdev_place"] = "other_namespace";
  doc["rdma"]["devices"][0]["ports"][0]["netdev_place"] = "not_captured";
  doc["rdma"]["devices"][0]["ports"][0]["netdev"] = nullptr;
  std::ostringstream out;
  render_text(report_from_json(doc), out, false);
  const std::string t = out.str();
  EXPECT_NE(t.find("ens1f0np0 (other netns)"), std::string::npos) << t;
  EXPECT_NE(t.find("not captured"), std::string::npos) << t;
}

}  // namespace
}  // namespace fabkit::reports
