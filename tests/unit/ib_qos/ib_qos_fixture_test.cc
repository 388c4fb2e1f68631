// One fixture per misconfiguration (tests/fixtures/ib_qos/README.md has their provenance): each
// runs the whole gather on the IB port of the sysfs capture (mlx5_0:1) with the fixture's MAD
// answers replayed through the request and reply codecs, then the judge. The healthy port has no
// finding at warn.
#include <gtest/gtest.h>

#include <set>

#include "common/file_reader.h"
#include "common/json_read.h"
#include "probes/ib_qos/ib_qos_facts.h"
#include "probes/ib_qos/mad_transport.h"
#include "probes/nccl_env/nccl_env_facts.h"
#include "probes/rdma/rdma_facts.h"
#include "tests/support/ttar.h"
#include "tests/unit/ib_qos/fixture_run.h"

namespace fabkit::probes {
namespace {

using fabkit::testing::TempDir;

std::set<std::string> problems(const std::vector<Finding>& fs) {
  std::set<std::string> out;
  for (const auto& f : fs)
    if (f.severity >= Severity::kWarn) out.insert(f.code);
  return out;
}

Finding get(const std::vector<Finding>& fs, const std::string& code) {
  for (const auto& f : fs)
    if (f.code == code) return f;
  ADD_FAILURE() << "no finding " << code;
  return Finding{};
}

TEST(IbQosFixtures, HealthyPortHasNoWarning) {
  TempDir dir("ibqos-healthy");
  auto g = run_fixture("healthy", dir);
  ASSERT_EQ(g.facts.ports.size(), 1u);
  const auto& p = g.facts.ports[0];
  EXPECT_EQ(p.device, "mlx5_0");
  EXPECT_EQ(p.status, "ok") << p.detail;
  EXPECT_EQ(p.gid, "fe80:0000:0000:0000:b859:9f03:00d6:5b3e");
  ASSERT_TRUE(p.port_info);
  EXPECT_EQ(vls_text(p.port_info->oper_vls), "VL0-3");
  ASSERT_TRUE(p.sl2vl);
  EXPECT_EQ((*p.sl2vl)[5], 1);
  ASSERT_EQ(p.paths.size(), 1u);
  ASSERT_TRUE(p.paths[0].record) << p.paths[0].detail;
  EXPECT_EQ(p.paths[0].record->dgid, "fe80::b859:9f03:d6:5b3e");
  EXPECT_TRUE(problems(g.findings).empty());
  EXPECT_NE(get(g.findings, "ib_qos.nccl_sl").message.find("-> VL0"), std::string::npos);
  Json j = to_json(g.facts);
  EXPECT_EQ(j["source"], "replay");
  EXPECT_EQ(j["ports"][0]["nccl_vl"], 0);
  EXPECT_EQ(j["ports"][0]["path_records"][0]["record"]["sl"], 0);
}

TEST(IbQosFixtures, SlMappedToVl15Fails) {
  TempDir dir("ibqos-vl15");
  auto g = run_fixture("sl_to_vl15", dir);
  EXPECT_EQ(problems(g.findings), std::set<std::string>{"ib_qos.sl_to_vl15"});
  Finding f = get(g.findings, "ib_qos.sl_to_vl15");
  EXPECT_EQ(f.severity, Severity::kFail);
  EXPECT_EQ(f.subject, "mlx5_0:1");
  EXPECT_NE(f.message.find("NCCL_IB_SL=3"), std::string::npos);
  EXPECT_NE(f.message.find("VL15"), std::string::npos);
  EXPECT_NE(f.fix.find("qos_sl2vl"), std::string::npos);
  EXPECT_NE(f.fix.find("0,1,2,4,5"), std::string::npos);  // the SLs that still reach a data VL
}

TEST(IbQosFixtures, SlMappedAboveOperationalVlsFails) {
  TempDir dir("ibqos-operv");
  auto g = run_fixture("sl_vl_not_operational", dir);
  EXPECT_EQ(problems(g.findings), std::set<std::string>{"ib_qos.sl_vl_not_operational"});
  Finding f = get(g.findings, "ib_qos.sl_vl_not_operational");
  EXPECT_NE(f.message.find("VL3"), std::string::npos);
  EXPECT_NE(f.message.find("VL0-1"), std::string::npos);
  EXPECT_NE(f.fix.find("qos_max_vls"), std::string::npos);
}

TEST(IbQosFixtures, PathRecordSlDifferingWarnsWithTheValue) {
  TempDir dir("ibqos-pathsl");
  auto g = run_fixture("path_sl_differs", dir);
  EXPECT_EQ(problems(g.findings), std::set<std::string>{"ib_qos.path_sl_differs"});
  EXPECT_NE(get(g.findings, "ib_qos.path_sl_differs").fix.find("NCCL_IB_SL=2"), std::string::npos);
}

TEST(IbQosFixtures, SaErrorIsAnInfoNotAFailure) {
  TempDir dir("ibqos-norec");
  auto g = run_fixture("sa_no_records", dir);
  EXPECT_TRUE(problems(g.findings).empty());
  Finding f = get(g.findings, "ib_qos.path_record_unavailable");
  EXPECT_NE(f.message.find("ERR_NO_RECORDS"), std::string::npos);
}

TEST(IbQosFixtures, BadReplayFilesNameTheField) {
  auto expect_usage = [](const std::string& doc, const std::string& needle) {
    try {
      make_replay_mad_transport(Json::parse(doc), "--ib-qos-replay x.json");
      ADD_FAILURE() << "accepted " << doc;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_usage(R"({})", "top level");
  expect_usage(R"({"ports": {"mlx5_0": {}}})", "<device>:<port>");
  expect_usage(R"({"ports": {"mlx5_0:1": {"port_info": {"vl_cap": "VL0-9"}}}})",
               "ports.mlx5_0:1.port_info.vl_cap");
  expect_usage(
      R"({"ports": {"mlx5_0:1": {"port_info": {"vl_cap": "VL0-7", "oper_vls": 3}, "sl2vl": [1]}}})",
      "ports.mlx5_0:1.sl2vl");
  expect_usage(R"({"ports": {"mlx5_0:1": {"port_info": "lost"}}})", "\"timeout\"");
}

}  // namespace
}  // namespace fabkit::probes
