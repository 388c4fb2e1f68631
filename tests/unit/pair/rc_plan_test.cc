// The RC test's flags as a plan carried to the agents and into the report, the findings that say
// what a crashed runner or a lost agent cost the report, and the notes on the steps it skipped.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "fabric/pair/pair_steps.h"
#include "fabric/pair/rdma_rails.h"
#include "fabric/pair/rdma_rc_plan.h"
#include "fabric/pair/verdict.h"

namespace fabkit::pair {
namespace {

std::string usage_error(int64_t iters, const std::string& size, int64_t lat_iters) {
  try {
    parse_rc_plan(iters, size, lat_iters);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(RcPlanFlags, DefaultsArePerftestsAndSuffixesWork) {
  RcPlan p = parse_rc_plan(kRcWriteBwIters, "64K", kRcSendLatIters);
  EXPECT_EQ(p.write_bw_bytes, 65536u);
  EXPECT_EQ(p.write_bw_iters, 5000);
  EXPECT_EQ(p.send_lat_bytes, 2u);
  EXPECT_EQ(p.send_lat_iters, 1000);
  EXPECT_EQ(parse_rc_plan(200, "1M", 50).write_bw_bytes, 1u << 20);
  EXPECT_EQ(parse_rc_plan(200, "4096", 50).write_bw_bytes, 4096u);
  EXPECT_EQ(parse_rc_plan(1, "16M", 1).write_bw_bytes, 16u << 20);
}

TEST(RcPlanFlags, BadValuesNameTheFlagTheValueAndTheFix) {
  std::string e = usage_error(0, "64K", 1000);
  EXPECT_NE(e.find("--rc-iters 0: give 1..1000000"), std::string::npos) << e;
  EXPECT_NE(e.find("default is 5000"), std::string::npos) << e;
  e = usage_error(5000, "64K", 2000000);
  EXPECT_NE(e.find("--rc-lat-iters 2000000"), std::string::npos) << e;
  for (const char* bad : {"0", "17M", "64Q", "", "-1", "1G", "99999999999"}) {
    e = usage_error(5000, bad, 1000);
    EXPECT_NE(e.find("--rc-size '" + std::string(bad) + "'"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("e.g. --rc-size 64K"), std::string::npos) << e;
  }
}

TEST(RcPlanFlags, CarriedToTheAgentsWithABudgetTheControllerOutwaits) {
  RcPortPair p{"rxe0", "rxe0", 1, 1, 1, 1, "Ethernet", 10.0, "198.18.60.0/24"};
  RcPlan plan = parse_rc_plan(300, "32K", 40);
  Json bw = rc_request_args(p, true, "write_bw", "10.0.0.1", "10.0.0.2", 4000, 10000, plan);
  EXPECT_EQ(bw["size_bytes"], 32768);
  EXPECT_EQ(bw["iters"], 300);
  Json lat = rc_request_args(p, false, "send_lat", "10.0.0.2", "", 4000, 10000, plan);
  EXPECT_EQ(lat["size_bytes"], 2);
  EXPECT_EQ(lat["iters"], 40);
  // The agent's budget: set-up and the last completion at the timeout each, the transfer at
  // 100 Mbit/s (write_bw) or 50 ms a round trip (send_lat); the controller waits 5 s longer.
  EXPECT_EQ(bw["budget_ms"], 40000 + 32768 * 310 * 8 / 100000);
  EXPECT_EQ(lat["budget_ms"], 40000 + 50 * 50);
  EXPECT_EQ(rc_answer_bound_ms("send_lat", 10000, plan), 40000 + 50 * 50 + 5000);
  // Fewer iterations than perftest's: the histogram holds exactly those.
  RdmaRcFacts rc;
  rc.plan = plan;
  EXPECT_EQ(to_json(rc)["plan"],
            Json({{"write_bw", {{"size_bytes", 32768}, {"iters", 300}}},
                  {"send_lat", {{"size_bytes", 2}, {"iters", 40}}}}));
  LatencyHistogram h;
  for (int i = 0; i < 40; ++i) h.add(22000.0);
  Json ok = {{"status", "ok"}, {"bw_gbps", 0.12}, {"diagnoses", Json::array()}};
  Json lat_client = {{"status", "ok"}, {"lat_us_median", 22000.0}, {"lat_us_p99", 22000.0},
                     {"lat_histogram", fabkit::to_json(h)}, {"diagnoses", Json::array()}};
  RcPairResult row = combine_rc(p, {ok, ok}, {lat_client, ok}, plan);
  EXPECT_EQ(row.status, "ok") << row.reason;
  EXPECT_EQ(combine_rc(p, {ok, ok}, {lat_client, ok}).status, "failed");  // 40 is not 1000
}

Json crashed_rank(const std::string& signal_text) {
  return {{"transport", "gloo-ibverbs"},
          {"status", "failed"},
          {"reason", "the gloo-ibverbs runner (child pid 42) was " + signal_text +
                         " after 1 of 2 sizes; its last stderr lines: terminate called"},
          {"sizes", Json::array()},
          {"extra", {{"error", "runner_crashed"}, {"child_exit", signal_text}}}};
}

TEST(RunnerCrashFindings, ACrashedRunnerIsAFailNamingHostSignalAndWords) {
  PairFacts f;
  f.host_a = "vm0";
  f.host_b = "vm1";
  TransportResult t;
  t.transport = "gloo-ibverbs";
  t.status = "failed";
  t.reason = "rank 1: ...";
  t.ranks = Json::array({{{"status", "failed"}, {"reason", "peer closed"}, {"extra", {{"error", "peer_closed"}}}},
                         crashed_rank("killed by SIGABRT (signal 6: Aborted)")});
  f.transports = {t};
  auto fs = judge_pair(f, compute_verdict(f));
  const Finding* crash = nullptr;
  for (const auto& x : fs)
    if (x.code == "pair.transport_crashed") crash = &x;
  ASSERT_TRUE(crash);
  EXPECT_EQ(crash->severity, Severity::kFail);
  EXPECT_EQ(crash->subject, "gloo-ibverbs on vm1");
  EXPECT_NE(crash->message.find("vm1: the gloo-ibverbs runner (child pid 42) was killed by SIGABRT"),
            std::string::npos)
      << crash->message;
  EXPECT_NE(crash->message.find("terminate called"), std::string::npos);
  EXPECT_FALSE(crash->fix.empty());
  for (const auto& x : fs) EXPECT_NE(x.code, "pair.transport_failed") << x.message;  // not twice
}

TEST(RunnerCrashFindings, StepsSkippedAfterALostAgentSayWhy) {
  StepRecord lost{"allreduce:gloo-ibverbs", "vm1", "failed", "pair.agent_lost",
                  "control connection: closed (agent process: killed by SIGABRT (signal 6: Aborted))", 10};
  EXPECT_TRUE(ends_session(lost));
  EXPECT_EQ(lost_agent_note(lost),
            "not run: the agent on vm1 was lost in step 'allreduce:gloo-ibverbs' (pair.agent_lost: "
            "control connection: closed (agent process: killed by SIGABRT (signal 6: Aborted)))");
  StepRecord answered{"allreduce:gloo-tcp", "vm1", "failed", "pair.agent_error", "agent.bind_failed", 1};
  EXPECT_FALSE(ends_session(answered));
  EXPECT_FALSE(ends_session({"rdma_rc", "", "skipped", "", "not run: ...", 0}));
  EXPECT_EQ(first_failure({{"launch", "vm0", "ok", "", "", 1}, lost}),
            "step 'allreduce:gloo-ibverbs' failed on vm1 (pair.agent_lost: control connection: "
            "closed (agent process: killed by SIGABRT (signal 6: Aborted)))");
}

TEST(RunnerCrashFindings, SkippedRcTestWithRdmaPortsIsAWarning) {
  PairFacts f;
  f.host_a = "vm0";
  f.host_b = "vm1";
  auto port = [](const std::string& gid) {
    return Json{{"port", 1}, {"state", "ACTIVE"}, {"link_layer", "Ethernet"}, {"rate_gbps", 10.0},
                {"roce_v2_gid_index", 1},
                {"gids", Json::array({{{"index", 1}, {"type", "RoCE v2"}, {"gid", gid}}})}};
  };
  auto report = [&](const std::string& addr) {
    return Json{{"kind", "node"},
                {"rdma", {{"devices", Json::array({{{"name", "rxe0"}, {"ports", Json::array({port(addr)})}}})}}}};
  };
  f.a.report = report("0000:0000:0000:0000:0000:ffff:0a00:020f");  // 10.0.2.15
  f.b.report = report("0000:0000:0000:0000:0000:ffff:0a00:0210");  // 10.0.2.16
  ASSERT_FALSE(plan_rails(f.a.report, f.b.report).pairs.empty());
  f.rdma_rc.status = "skipped";
  f.rdma_rc.reason = "not run: the agent on vm1 was lost in step 'port_check' (pair.agent_lost: x)";
  auto fs = judge_rdma_rc(f);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "pair.rdma_rc_skipped");
  EXPECT_EQ(fs[0].severity, Severity::kWarn);
  EXPECT_NE(fs[0].message.find("the agent on vm1 was lost in step 'port_check'"), std::string::npos);
  // Nothing to measure: no warning.
  f.a.report = Json{{"kind", "node"}};
  EXPECT_TRUE(judge_rdma_rc(f).empty());
}

}  // namespace
}  // namespace fabkit::pair
