// The pure verdict: candidate selection, link choice, link-rate model, transport ranking and the
// findings each situation produces.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/errors.h"
#include "fabric/pair/pair_controller.h"
#include "fabric/pair/transport_plan.h"
#include "fabric/pair/verdict.h"

namespace fabkit::pair {
namespace {

Candidate cand(const std::string& ifname, const std::string& addr, std::optional<int64_t> speed,
               int64_t mtu = 1500) {
  Candidate c;
  c.ifname = ifname;
  c.addr = addr;
  c.speed_mbps = speed;
  c.mtu = mtu;
  c.kind = "physical";
  return c;
}

LinkResult link(Candidate a, Candidate b, const std::string& status, double gbit, double rtt = 50) {
  LinkResult l;
  l.a = std::move(a);
  l.b = std::move(b);
  l.status = status;
  l.single_stream_gbit_s = gbit;
  l.rtt_median_us = rtt;
  if (status != "open") l.error = "connect: " + status;
  return l;
}

TransportResult transport(const std::string& name, std::vector<std::pair<uint64_t, double>> busbw,
                          bool correct = true, const std::string& status = "ok") {
  TransportResult t;
  t.transport = name;
  t.status = status;
  for (auto [bytes, bw] : busbw) t.sizes.push_back({bytes, 1.0, bw, bw, correct});
  return t;
}

bool has(const std::vector<Finding>& fs, const std::string& code) {
  return std::any_of(fs.begin(), fs.end(), [&](const Finding& f) { return f.code == code; });
}

PairFacts healthy() {
  PairFacts f;
  f.host_a = "a";
  f.host_b = "b";
  f.links = {link(cand("eth9", "198.18.9.1", 1000), cand("eth9", "198.18.9.2", 1000), "open", 0.9),
             link(cand("eth0", "198.18.0.1", 100000), cand("eth0", "198.18.0.2", 100000), "open", 20.0),
             link(cand("eth0", "198.18.0.1", 100000), cand("eth9", "198.18.9.2", 1000), "unreachable", 0)};
  f.rendezvous = {true, 29400, "198.18.0.1", "198.18.0.2", "listening", "open", 80.0, 3000, ""};
  f.transports = {transport("gloo-tcp", {{1 << 20, 2.0}, {64 << 20, 5.0}}),
                  transport(kRawExchange, {{1 << 20, 3.0}, {64 << 20, 10.0}}),
                  transport("fabkit-socket", {{1 << 20, 2.5}, {64 << 20, 9.0}})};
  return f;
}

TEST(Candidates, OnlyUpRunningIpv4NonLoopbackAddressesCount) {
  Json ifs = Json::parse(R"([
    {"name":"lo","up":true,"running":true,"kind":"loopback","mtu":65536,"speed_mbps":null,
     "addresses":[{"family":"ipv4","address":"127.0.0.1","prefix_len":8}]},
    {"name":"eth0","up":true,"running":true,"kind":"physical","mtu":9000,"speed_mbps":100000,
     "addresses":[{"family":"ipv4","address":"198.18.0.1","prefix_len":24},
                  {"family":"ipv6","address":"fe80::1","prefix_len":64}]},
    {"name":"eth1","up":true,"running":false,"kind":"physical","mtu":1500,"speed_mbps":null,
     "addresses":[{"family":"ipv4","address":"198.18.1.1","prefix_len":24}]},
    {"name":"decoy","up":true,"running":true,"kind":"veth","mtu":1500,"speed_mbps":null,
     "addresses":[{"family":"ipv4","address":"198.18.2.1","prefix_len":24}]}])");
  auto c = candidates_from_interfaces(ifs);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].ifname, "eth0");
  EXPECT_EQ(c[0].addr, "198.18.0.1");
  EXPECT_EQ(*c[0].mtu, 9000);
  EXPECT_EQ(*c[0].speed_mbps, 100000);
  EXPECT_EQ(c[1].ifname, "decoy");  // decoys stay: they are measured and reported
  EXPECT_FALSE(c[1].speed_mbps.has_value());
}

TEST(Verdict, ChoosesTheFastestOpenLink) {
  auto f = healthy();
  EXPECT_EQ(choose_link(f.links), std::optional<size_t>(1));
  f.links[1].status = "blocked";
  EXPECT_EQ(choose_link(f.links), std::optional<size_t>(0));
  f.links[0].status = "error";
  EXPECT_FALSE(choose_link(f.links).has_value());
}

TEST(Verdict, LinkRateIsTheSlowerEndAndUnknownStaysUnknown) {
  EXPECT_DOUBLE_EQ(*link_rate_gbit_s(cand("a", "x", 100000), cand("b", "y", 25000)), 25.0);
  EXPECT_FALSE(link_rate_gbit_s(cand("a", "x", std::nullopt), cand("b", "y", 25000)).has_value());
  EXPECT_FALSE(link_rate_gbit_s(cand("a", "x", 0), cand("b", "y", 25000)).has_value());
  // 10 GB/s busbw on a 100 Gbit/s link = 80% of the line rate.
  EXPECT_DOUBLE_EQ(link_fraction(10.0, 100.0), 0.8);
}

TEST(Verdict, RanksByPeakBusbwAndNeverRecommendsTheRawExchange) {
  auto f = healthy();
  auto v = compute_verdict(f);
  ASSERT_EQ(v.ranking.size(), 3u);
  EXPECT_EQ(v.ranking[0].transport, kRawExchange);
  EXPECT_EQ(v.ranking[1].transport, "fabkit-socket");
  EXPECT_EQ(v.ranking[2].transport, "gloo-tcp");
  EXPECT_EQ(v.transport, std::optional<std::string>("fabkit-socket"));
  EXPECT_DOUBLE_EQ(v.ranking[1].peak_busbw_gbps, 9.0);
  EXPECT_EQ(v.ranking[1].peak_bytes, 64u << 20);
  ASSERT_TRUE(v.ranking[1].link_fraction.has_value());
  EXPECT_DOUBLE_EQ(*v.ranking[1].link_fraction, 9.0 * 8 / 100.0);
  EXPECT_DOUBLE_EQ(*v.ranking[1].vs_raw_exchange, 0.9);
  EXPECT_DOUBLE_EQ(*v.ranking[2].vs_raw_exchange, 0.5);
}

TEST(Verdict, IncorrectOrFailedTransportsRankLastAndAreFlagged) {
  auto f = healthy();
  f.transports.push_back(transport("fast-but-wrong", {{64 << 20, 50.0}}, /*correct=*/false));
  f.transports.push_back(transport("gloo-ibverbs", {}, true, "unavailable"));
  auto v = compute_verdict(f);
  EXPECT_EQ(v.transport, std::optional<std::string>("fabkit-socket"));
  EXPECT_NE(v.ranking.back().transport, "fabkit-socket");
  auto fs = judge_pair(f, v);
  EXPECT_TRUE(has(fs, "pair.allreduce_incorrect"));
  EXPECT_TRUE(has(fs, "pair.transport_unavailable"));
  EXPECT_TRUE(has(fs, "pair.recommended"));
  EXPECT_TRUE(has(fs, "pair.link_unreachable"));
  EXPECT_TRUE(has(fs, "pair.link_slower"));  // 0.9 vs 20 Gbit/s
  EXPECT_FALSE(has(fs, "pair.port_blocked"));
  EXPECT_EQ(worst_severity(fs), Severity::kFail);
}

TEST(Verdict, HealthyPairHasOnlyInfoFindings) {
  auto f = healthy();
  auto fs = judge_pair(f, compute_verdict(f));
  EXPECT_EQ(worst_severity(fs), Severity::kInfo);
}

TEST(Verdict, PortStatesMapToNamedFindings) {
  for (auto [status, code] : {std::pair<const char*, const char*>{"blocked", "pair.port_blocked"},
                              {"closed", "pair.port_closed"}, {"unreachable", "pair.port_unreachable"}}) {
    auto f = healthy();
    f.rendezvous.status = status;
    auto fs = judge_pair(f, compute_verdict(f));
    EXPECT_TRUE(has(fs, code)) << status;
    EXPECT_EQ(worst_severity(fs), Severity::kFail);
  }
  auto f = healthy();
  f.rendezvous.listen_status = "in_use";
  f.rendezvous.status = "";
  EXPECT_TRUE(has(judge_pair(f, compute_verdict(f)), "pair.port_in_use"));
}

TEST(Verdict, MtuMismatchAndUnknownSpeedOnTheChosenLinkWarn) {
  auto f = healthy();
  f.links[1].b.mtu = 9000;
  f.links[1].a.speed_mbps.reset();
  auto v = compute_verdict(f);
  auto fs = judge_pair(f, v);
  EXPECT_TRUE(has(fs, "pair.mtu_mismatch"));
  EXPECT_TRUE(has(fs, "pair.link_speed_unknown"));
  EXPECT_FALSE(v.ranking[1].link_fraction.has_value());  // unknown, never a default
}

TEST(Verdict, AFailedStepIsReportedByNameAndStopsTheRest) {
  PairFacts f;
  f.host_a = "a";
  f.host_b = "b";
  f.steps = {{"launch", "a", "ok", "", "", 1}, {"hello", "b", "failed", "pair.launch_failed",
                                               "no hello within 1000 ms", 1000}};
  auto fs = judge_pair(f, compute_verdict(f));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "pair.launch_failed");
  EXPECT_EQ(fs[0].subject, "b");
  EXPECT_NE(fs[0].message.find("'hello'"), std::string::npos);
}

TEST(Verdict, NoReachableLinkFails) {
  PairFacts f;
  f.links = {link(cand("x", "198.18.1.1", 1000), cand("y", "198.18.2.1", 1000), "unreachable", 0)};
  EXPECT_TRUE(has(judge_pair(f, compute_verdict(f)), "pair.no_reachable_link"));
}

Json rdma_report(const std::string& ll, const std::string& state, Json gid, double rate) {
  return {{"rdma", {{"source", "sysfs"}, {"devices", Json::array({{{"name", "mlx5_0"}, {"ports", Json::array({
      {{"port", 1}, {"state", state}, {"link_layer", ll}, {"rate_gbps", rate}, {"roce_v2_gid_index", gid}}})}}})}}}};
}

TEST(TransportPlan, RdmaNeedsAnActivePortWithTheSameLinkLayerOnBothHosts) {
  AgentFacts a, b;
  a.host = "a";
  b.host = "b";
  EXPECT_TRUE(plan_transport("gloo-tcp", a, b).runnable);  // sockets need nothing more
  auto p = plan_transport("gloo-ibverbs", a, b);
  EXPECT_FALSE(p.runnable);
  EXPECT_NE(p.reason.find("no ACTIVE RDMA port on a"), std::string::npos) << p.reason;
  a.report = rdma_report("InfiniBand", "ACTIVE", nullptr, 200);
  b.report = rdma_report("InfiniBand", "DOWN", nullptr, 200);
  EXPECT_NE(plan_transport("gloo-ibverbs", a, b).reason.find("on b"), std::string::npos);
  b.report = rdma_report("Ethernet", "ACTIVE", 3, 100);
  EXPECT_NE(plan_transport("gloo-ibverbs", a, b).reason.find("link layers differ"), std::string::npos);
  b.report = rdma_report("InfiniBand", "ACTIVE", nullptr, 100);
  p = plan_transport("gloo-ibverbs", a, b);
  ASSERT_TRUE(p.runnable) << p.reason;
  EXPECT_EQ(p.extra_a["hca"], "mlx5_0");
  EXPECT_EQ(p.extra_a["ib_port"], 1);
  EXPECT_EQ(p.extra_a["gid_index"], -1);
  a.report = rdma_report("Ethernet", "ACTIVE", nullptr, 100);
  b.report = rdma_report("Ethernet", "ACTIVE", 3, 100);
  EXPECT_NE(plan_transport("gloo-ibverbs", a, b).reason.find("RoCE v2 GID on a"), std::string::npos);
  a.report = rdma_report("Ethernet", "ACTIVE", 3, 100);
  p = plan_transport("gloo-ibverbs", a, b);
  ASSERT_TRUE(p.runnable);
  EXPECT_EQ(p.extra_b["gid_index"], 3);
  EXPECT_TRUE(plan_transport("nccl-roce", a, b).runnable);
  EXPECT_NE(plan_transport("nccl-ib", a, b).reason.find("needs a InfiniBand port"), std::string::npos);
  EXPECT_TRUE(plan_transport("nccl-socket", AgentFacts{}, AgentFacts{}).runnable);
}

TEST(Verdict, RdmaTransportsUseTheHcaRateNotTheInterfaceSpeed) {
  auto f = healthy();
  f.a.report = rdma_report("InfiniBand", "ACTIVE", nullptr, 200);
  f.b.report = rdma_report("InfiniBand", "ACTIVE", nullptr, 100);
  f.transports.push_back(transport("gloo-ibverbs", {{64 << 20, 10.0}}));
  auto v = compute_verdict(f);
  EXPECT_EQ(v.transport, std::optional<std::string>("gloo-ibverbs"));
  EXPECT_DOUBLE_EQ(*v.ranking[0].link_rate_gbit_s, 100.0);  // the slower HCA
  EXPECT_DOUBLE_EQ(*v.ranking[0].link_fraction, 0.8);
}

TEST(Sizes, ParsesSuffixesAndRejectsNonsense) {
  EXPECT_EQ(parse_sizes("8,1K,64M,1G"), (std::vector<uint64_t>{8, 1024, 64u << 20, 1u << 30}));
  EXPECT_THROW(parse_sizes("8,,16"), UsageError);
  EXPECT_THROW(parse_sizes("2"), UsageError);
  EXPECT_THROW(parse_sizes("5G"), UsageError);
  EXPECT_THROW(parse_sizes("1T"), UsageError);
  EXPECT_THROW(parse_sizes("-8"), UsageError);
  auto d = default_pair_sizes();
  EXPECT_EQ(d.front(), 8u);
  // 8 * 4^k stops at 128 MiB; issue #3's sweep ends at 256 MiB, added as the end point.
  EXPECT_EQ(d[d.size() - 2], 128u << 20);
  EXPECT_EQ(d.back(), 256u << 20);
}

}  // namespace
}  // namespace fabkit::pair

namespace fabkit::pair {
namespace {

Json two_rail_report(const std::string& ib_hca) {
  Json devices = Json::array();
  for (int i = 0; i < 2; ++i) {
    const std::string gid = "fe80:0000:0000:000" + std::to_string(i) + ":0000:0000:0000:00" + std::to_string(10 + i);
    devices.push_back({{"name", "mlx5_" + std::to_string(i)},
                       {"ports", {{{"port", 1}, {"state", "ACTIVE"}, {"link_layer", "InfiniBand"},
                                   {"roce_v2_gid_index", nullptr}, {"rate_gbps", 400},
                                   {"gids", {{{"index", 0}, {"gid", gid}}}}}}}});
  }
  Json r = {{"rdma", {{"devices", devices}}}, {"nccl_env", {{"variables", Json::array()}}}};
  if (!ib_hca.empty()) r["nccl_env"]["variables"].push_back({{"name", "NCCL_IB_HCA"}, {"value", ib_hca}});
  return r;
}

// The RDMA transports run on the ports the job would use: the NCCL_IB_HCA selection, on a
// same-rail pair; not the first ACTIVE port of each host.
TEST(TransportPlan, RdmaPortsFollowNcclIbHcaOnOneRail) {
  AgentFacts a, b;
  a.host = "a";
  b.host = "b";
  a.report = two_rail_report("");
  b.report = two_rail_report("=mlx5_1:1");
  auto p = plan_transport("nccl-ib", a, b);
  ASSERT_TRUE(p.runnable) << p.reason;
  EXPECT_EQ(p.extra_a["hca"], "mlx5_1");  // the rail of B's selected port
  EXPECT_EQ(p.extra_b["hca"], "mlx5_1");
  b.report = two_rail_report("mlx5_9");
  p = plan_transport("nccl-ib", a, b);
  EXPECT_FALSE(p.runnable);
  EXPECT_NE(p.reason.find("NCCL_IB_HCA (unset on a, mlx5_9 on b)"), std::string::npos) << p.reason;
}

}  // namespace
}  // namespace fabkit::pair
