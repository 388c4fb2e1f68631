#include "reports/baseline/node_baseline.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

namespace fabkit::reports::baseline {
namespace {

Json load(const std::string& rel) {
  std::ifstream f(std::string(FABKIT_FIXTURES) + "/" + rel);
  return Json::parse(f);
}

std::vector<std::string> codes(const std::vector<Finding>& fs) {
  std::vector<std::string> c;
  for (const auto& f : fs) c.push_back(f.code + " " + f.subject);
  return c;
}

// node-gpu-ib-01: mlx5_0:1 and mlx5_1:1 ACTIVE at 200, mlx5_2:1 DOWN at 10; 2 GPUs.
TEST(NodeBaseline, SameReportNoFindings) {
  Json n = load("profile/node-gpu-ib-01.json");
  auto r = compare_node_baseline(n, n);
  EXPECT_TRUE(r.findings.empty()) << codes(r.findings)[0];
  ASSERT_EQ(r.ports.size(), 3u);
  EXPECT_EQ(r.ports[2].port, "mlx5_2:1");
  EXPECT_EQ(r.ports[2].new_state, "DOWN");  // down in both: not a change, and not ACTIVE
}

TEST(NodeBaseline, PortDownRateDropAndLostGpu) {
  Json old_doc = load("profile/node-gpu-ib-01.json");
  Json now = old_doc;
  now["rdma"]["devices"][0]["ports"][0]["state"] = "DOWN";
  now["rdma"]["devices"][1]["ports"][0]["rate_gbps"] = 100;
  now["gpus"]["count"] = 1;
  auto r = compare_node_baseline(old_doc, now);
  EXPECT_EQ(codes(r.findings), (std::vector<std::string>{"baseline.port_lost mlx5_0:1",
                                                         "baseline.port_rate_dropped mlx5_1:1",
                                                         "baseline.gpu_count_dropped GPUs"}));
  EXPECT_NE(r.findings[1].message.find("rate 200 → 100 Gbit/s"), std::string::npos);
  // One aligned row per port: name, link layer, then state and rate in the baseline and now.
  EXPECT_TRUE(std::regex_search(node_baseline_table_text(r),
                                std::regex("\n  mlx5_0:1 +InfiniBand +ACTIVE +200 +DOWN +")))
      << node_baseline_table_text(r);
}

TEST(NodeBaseline, PortSlowerThanItsSiblingsIsAnExpectedFigure) {
  std::vector<PortRow> ports = {{"mlx5_0:1", "InfiniBand", "ACTIVE", "ACTIVE", 200.0, 200.0},
                                {"mlx5_1:1", "InfiniBand", "ACTIVE", "ACTIVE", 50.0, 50.0},
                                {"mlx5_2:1", "Ethernet", "ACTIVE", "ACTIVE", 100.0, 100.0},
                                {"mlx5_3:1", "InfiniBand", "DOWN", "DOWN", 10.0, 10.0}};
  auto fs = judge_port_rates(ports);
  EXPECT_EQ(codes(fs), std::vector<std::string>{"baseline.port_rate_mismatch mlx5_1:1"});
  EXPECT_NE(fs[0].message.find("50 Gbit/s while this node's fastest InfiniBand port runs at 200"),
            std::string::npos);
  EXPECT_NE(fs[0].fix.find("ibstat mlx5_1"), std::string::npos);
}

TEST(NodeBaseline, WrongDocumentsNamed) {
  Json n = load("profile/node-gpu-ib-01.json");
  try {
    compare_node_baseline(n, load("reports/pair-netns-veth.json"));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("new: not a node report", 0), 0u);
  }
  Json bad = n;
  bad["rdma"]["devices"][0]["ports"][0]["rate_gbps"] = "fast";
  try {
    compare_node_baseline(bad, n);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("old: rdma.devices[0].ports[0].rate_gbps"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace fabkit::reports::baseline
