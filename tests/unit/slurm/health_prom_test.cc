#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "slurm/health.h"
#include "reports/prom/prom_text.h"
#include "reports/report_render.h"

namespace fabkit::slurm {
namespace {

Report report_with(std::vector<Finding> f) {
  Report r;
  r.kind = "node";
  r.findings = std::move(f);
  return r;
}

TEST(Health, WarningsNeverDrain) {
  auto r =
      report_with({warn("limits.memlock_low", "RLIMIT_MEMLOCK", "64 KiB", "ulimit -l unlimited"),
                   info("rdma.no_devices", "node", "none")});
  auto d = decide_health(r, "node7");
  EXPECT_FALSE(d.drain);
  EXPECT_TRUE(d.scontrol_argv.empty());
  EXPECT_EQ(health_line(d, r, false), "fabcheck health: node7 ok (0 fail, 1 warn)");
}

TEST(Health, FirstFailNamedOthersCountedOneWordReason) {
  auto r =
      report_with({warn("limits.memlock_low", "RLIMIT_MEMLOCK", "", "x"),
                   fail("rdma.port_polling", "mlx5_1:1", "no link partner", "check the cable"),
                   fail("rdma.lid_zero", "mlx5_1:1", "", "x"), fail("net.x", "eth0", "", "x")});
  auto d = decide_health(r, "node7");
  ASSERT_TRUE(d.drain);
  EXPECT_EQ(d.reason, "fabcheck: rdma.port_polling mlx5_1:1 (+2 more)");
  EXPECT_EQ(d.scontrol_argv,
            (std::vector<std::string>{"scontrol", "update", "NodeName=node7", "State=DRAIN",
                                      "Reason=fabcheck: rdma.port_polling mlx5_1:1 (+2 more)"}));
  EXPECT_EQ(health_line(d, r, true),
            "fabcheck health: node7 drain: fabcheck: rdma.port_polling mlx5_1:1 (+2 more) (dry "
            "run: not drained)");
}

TEST(Health, ReasonIsSanitisedAndBounded) {
  auto r = report_with(
      {fail("x.y", std::string(300, 'a') + "\"\n'\\", "", "x"), fail("x.z", "b", "", "x")});
  auto d = decide_health(r, "n");
  EXPECT_LE(d.reason.size(), kMaxReasonChars);
  EXPECT_EQ(d.reason.find_first_of("\"'\\\n"), std::string::npos);
  EXPECT_NE(d.reason.find("... (+1 more)"), std::string::npos);
  auto q = decide_health(report_with({fail("x.y", "a\"b\nc", "", "x")}), "n");
  EXPECT_EQ(q.reason, "fabcheck: x.y a b c");
}

TEST(Prom, FamiliesGroupedAndValuesFromTheReport) {
  Report r = report_with({fail("rdma.port_polling", "mlx5_1:1", "", "x"), info("a.b", "c", "")});
  r.sections.push_back(
      {"rdma",
       {{"devices", Json::array({{{"name", "mlx5_0"},
                                  {"ports", Json::array({{{"port", 1},
                                                          {"state", "ACTIVE"},
                                                          {"state_code", 4},
                                                          {"phys_state_code", 5},
                                                          {"link_layer", "InfiniBand"},
                                                          {"rate_gbps", 200}},
                                                         {{"port", 2},
                                                          {"state", "DOWN"},
                                                          {"state_code", 1},
                                                          {"phys_state_code", 2},
                                                          {"link_layer", "InfiniBand"},
                                                          {"rate_gbps", 200}}})}}})}}});
  r.sections.push_back(
      {"net",
       {{"interfaces",
         Json::array(
             {{{"name", "lo"}, {"kind", "loopback"}, {"running", true}},
              {{"name", "ib0"}, {"kind", "ipoib"}, {"running", true}, {"speed_mbps", 200000}},
              {{"name", "weird\"if"}, {"kind", "other"}, {"running", false}}})}}});
  // What `fabcheck node --prom` writes: reports/prom's node families from the report's JSON.
  auto families = reports::prom::node_families(report_to_json(r));
  families.push_back(reports::prom::check_timestamp(1700000000.5));
  std::string t = reports::prom::render(families);
  EXPECT_NE(t.find("fabkit_node_check_timestamp_seconds 1700000000.5\n"), std::string::npos) << t;
  EXPECT_NE(t.find("fabkit_node_findings{severity=\"fail\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("fabkit_node_findings{severity=\"warn\"} 0\n"), std::string::npos) << t;
  EXPECT_NE(t.find("fabkit_node_finding{code=\"rdma.port_polling\",severity=\"fail\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("fabkit_node_hca_port_active{device=\"mlx5_0\",port=\"1\"} 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("fabkit_node_hca_port_active{device=\"mlx5_0\",port=\"2\"} 0\n"), std::string::npos) << t;
  EXPECT_NE(t.find("fabkit_node_hca_port_phys_state_code{device=\"mlx5_0\",port=\"2\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("fabkit_node_hca_port_rate_bytes_per_second{device=\"mlx5_0\",port=\"2\"} 25000000000\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("fabkit_node_interface_speed_bytes_per_second{interface=\"ib0\"} 25000000000\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("fabkit_node_interface_running{interface=\"weird\\\"if\"} 0\n"), std::string::npos) << t;
  EXPECT_EQ(t.find("interface=\"lo\""), std::string::npos) << t;
  // Each family once, its samples contiguous after its TYPE line.
  std::istringstream in(t);
  std::string line, current;
  std::map<std::string, int> types;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      current = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_EQ(++types[current], 1) << current;
    } else if (line[0] != '#') {
      EXPECT_EQ(line.substr(0, current.size()), current) << line;
      EXPECT_TRUE(line[current.size()] == '{' || line[current.size()] == ' ') << line;
    }
  }
  EXPECT_EQ(reports::prom::escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

}  // namespace
}  // namespace fabkit::slurm
