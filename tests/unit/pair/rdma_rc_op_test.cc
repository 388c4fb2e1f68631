// The "rdma_rc" agent operation end to end with the fake VerbsApi: two sides in threads (as two
// agents), each running the op handler, exchanging endpoint info over a real loopback TCP channel
// authenticated with the session token; plus the controller's pure parts (port pairs, the row,
// the findings, the section).
#include <gtest/gtest.h>

#include <cstdio>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <thread>

#include "fabric/agent/agent_commands.h"
#include "fabric/agent/agent_rdma.h"
#include "fabric/pair/pair_controller.h"
#include "fabric/pair/pair_document.h"
#include "fabric/pair/rdma_rails.h"
#include "fabric/pair/rdma_rc_plan.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/wire/wire_error.h"
#include "tests/support/ttar.h"
#include "verbs/fake_verbs_api.h"

namespace fabkit::agent {
namespace {

// The generated form (64 hex digits): its own key, no scrypt in the tests' tight deadlines.
const std::string kToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

std::unique_ptr<verbs::FakeVerbsApi> fake(const std::string& fixture) {
  std::ifstream in(testing::project_fixtures() / "rdma" / fixture);
  return std::make_unique<verbs::FakeVerbsApi>(verbs::load_fake_devices(Json::parse(in)));
}

uint16_t free_loopback_port() {
  wire::Fd fd = tcp::listen_tcp("127.0.0.1", 0);
  return tcp::local_port(fd.get());
}

// The controller's requests, as rc_request_args builds them: server mlx5_1 (host B), client
// mlx5_0 (host A), both on loopback.
Json request(const std::string& role, const std::string& mode, uint16_t port, int timeout_ms = 3000) {
  pair::RcPortPair p{"mlx5_0", "mlx5_1", 1, 1, -1, -1, "InfiniBand", std::nullopt};
  Json j = pair::rc_request_args(p, role == "client", mode, "127.0.0.1", "127.0.0.1", port, timeout_ms);
  if (mode == "write_bw") j["iters"] = 200;  // keep the unit test fast; the fake copies memory
  return j;
}

struct Sides {
  Json server, client;
  double elapsed_ms = 0;
};

Sides run_both(verbs::VerbsApi& api, const Json& server_req, const Json& client_req,
               const std::string& client_token = kToken) {
  Sides out;
  auto t0 = std::chrono::steady_clock::now();
  std::thread t([&] { out.server = run_rc_op(api, parse_rc_args(server_req), kToken); });
  out.client = run_rc_op(api, parse_rc_args(client_req), client_token);
  t.join();
  out.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

bool has_code(const Json& doc, const std::string& code) {
  for (const auto& d : doc["diagnoses"])
    if (d["code"] == code) return true;
  return false;
}

TEST(RdmaRcOp, WriteBandwidthOverTheTokenChannel) {
  auto api = fake("cx6_ib_hdr.json");
  uint16_t port = free_loopback_port();
  auto r = run_both(*api, request("server", "write_bw", port), request("client", "write_bw", port));
  ASSERT_EQ(r.client["status"], "ok") << r.client.dump(2);
  ASSERT_EQ(r.server["status"], "ok") << r.server.dump(2);
  EXPECT_EQ(r.client["channel"], "ok");
  EXPECT_EQ(r.client["role"], "client");
  EXPECT_EQ(r.client["device"], "mlx5_0");
  EXPECT_EQ(r.client["path_mtu"], 4096);
  EXPECT_EQ(r.client["bytes"], uint64_t{65536} * 200);
  ASSERT_TRUE(r.client["bw_gbps"].is_number());
  EXPECT_GT(r.client["bw_gbps"].get<double>(), 0.0);
  EXPECT_EQ(r.server["data_verified"], true);
  // The exchange carried each side's real endpoint to the other.
  EXPECT_EQ(r.client["remote"]["qpn"], r.server["local"]["qpn"]);
  EXPECT_EQ(r.server["remote"]["qpn"], r.client["local"]["qpn"]);
  EXPECT_EQ(r.server["remote"]["device"], "mlx5_0:1");
  EXPECT_EQ(r.client["remote"]["rkey"], r.server["local"]["rkey"]);
  EXPECT_TRUE(r.client["diagnoses"].empty());
}

TEST(RdmaRcOp, SendLatencyOverRoceV2WithTheProbesGidIndex) {
  auto api = fake("cx5_roce_v2.json");
  uint16_t port = free_loopback_port();
  Json s = request("server", "send_lat", port), c = request("client", "send_lat", port);
  s["gid_index"] = c["gid_index"] = 3;  // the RoCE v2 entry in the fixture (show_gids)
  auto r = run_both(*api, s, c);
  ASSERT_EQ(r.client["status"], "ok") << r.client.dump(2) << r.server.dump(2);
  ASSERT_EQ(r.server["status"], "ok") << r.server.dump(2);
  EXPECT_EQ(r.client["local"]["gid_index"], 3);
  EXPECT_EQ(r.client["remote"]["gid_type"], "RoCE v2");
  ASSERT_TRUE(r.client["lat_us_median"].is_number());
  EXPECT_GE(r.client["lat_us_p99"].get<double>(), r.client["lat_us_median"].get<double>());
  EXPECT_TRUE(r.server["lat_us_median"].is_null());  // the client measures
  // The controller's reading of these very documents: the histogram holds every timed iteration.
  pair::RcPortPair p{"mlx5_0", "mlx5_1", 1, 1, 3, 3, "Ethernet", std::nullopt};
  pair::RcPairResult row = pair::combine_rc(p, Json::array(), {r.client, r.server});
  ASSERT_TRUE(row.lat_histogram) << row.reason;
  EXPECT_EQ(row.lat_histogram->total(), static_cast<uint64_t>(pair::kRcSendLatIters));
  EXPECT_TRUE(r.server["lat_histogram"].is_null());
}

TEST(RdmaRcOp, LidZeroIsDiagnosedOnBothSidesWithoutConnecting) {
  auto api = fake("cx6_ib_hdr.json");
  api->port("mlx5_1", 1)->attr.lid = 0;  // no subnet manager on B's port
  uint16_t port = free_loopback_port();
  auto r = run_both(*api, request("server", "write_bw", port), request("client", "write_bw", port));
  EXPECT_EQ(r.client["status"], "failed");
  EXPECT_EQ(r.server["status"], "failed");
  EXPECT_TRUE(has_code(r.client, "rdma.rc.lid_zero")) << r.client.dump(2);
  EXPECT_TRUE(has_code(r.server, "rdma.rc.lid_zero")) << r.server.dump(2);
  EXPECT_EQ(r.client["remote"]["lid"], 0);
  for (const auto& c : api->calls()) EXPECT_EQ(c.find("ibv_modify_qp RTR"), std::string::npos) << c;
}

TEST(RdmaRcOp, MtuMismatchConnectsAtTheMinimumWithAnInfoFinding) {
  auto api = fake("cx6_ib_hdr.json");
  api->port("mlx5_1", 1)->attr.active_mtu = verbs::Mtu::k2048;
  uint16_t port = free_loopback_port();
  auto r = run_both(*api, request("server", "write_bw", port), request("client", "write_bw", port));
  ASSERT_EQ(r.client["status"], "ok") << r.client.dump(2);
  EXPECT_EQ(r.client["path_mtu"], 2048);
  EXPECT_TRUE(has_code(r.client, "rdma.rc.mtu_mismatch"));
}

TEST(RdmaRcOp, WrongTokenNeverGetsAnEndpointAndEveryWaitEnds) {
  auto api = fake("cx6_ib_hdr.json");
  uint16_t port = free_loopback_port();
  auto r = run_both(*api, request("server", "write_bw", port, 600),
                    request("client", "write_bw", port, 600), std::string(64, 'f'));
  EXPECT_EQ(r.server["status"], "failed");
  EXPECT_EQ(r.server["channel"], "failed");
  EXPECT_NE(r.server["reason"].get<std::string>().find("no peer connected"), std::string::npos);
  ASSERT_TRUE(r.server.contains("remote"));
  EXPECT_TRUE(r.server["remote"].is_null());
  EXPECT_EQ(r.client["status"], "failed");
  EXPECT_NE(r.client["reason"].get<std::string>().find("wire.bad_token"), std::string::npos)
      << r.client["reason"];  // the client proves itself first: the server refuses it by name
  EXPECT_LT(r.elapsed_ms, 5000);
}

TEST(RdmaRcOp, RegMrFailureOnOneSideStopsThePeerPromptly) {
  auto api = fake("cx6_ib_hdr.json");
  api->fail_next("ibv_reg_mr", ENOMEM);  // whichever side registers first: memlock
  uint16_t port = free_loopback_port();
  auto r = run_both(*api, request("server", "write_bw", port, 4000), request("client", "write_bw", port, 4000));
  EXPECT_EQ(r.client["status"], "failed");
  EXPECT_EQ(r.server["status"], "failed");
  const Json& failed = has_code(r.client, "rdma.rc.reg_mr_failed") ? r.client : r.server;
  const Json& peer = &failed == &r.client ? r.server : r.client;
  ASSERT_TRUE(has_code(failed, "rdma.rc.reg_mr_failed")) << r.client.dump(2) << r.server.dump(2);
  EXPECT_NE(peer["reason"].get<std::string>().find("agent.rdma_rc_failed"), std::string::npos) << peer["reason"];
  EXPECT_LT(r.elapsed_ms, 3000);  // told by the peer, not by its own 4 s timeout
}

TEST(RdmaRcOp, ArgumentsAreCheckedBeforeAnythingRuns) {
  auto bad = [](Json args) {
    wire::Request req{1, "rdma_rc", std::move(args)};
    EXPECT_THROW(AgentSession::validate(req), wire::WireError) << req.args.dump();
  };
  Json good = request("client", "write_bw", 1234);
  EXPECT_NO_THROW(AgentSession::validate(wire::Request{1, "rdma_rc", good}));
  for (auto [k, v] : std::vector<std::pair<std::string, Json>>{
           {"role", "both"}, {"mode", "read_bw"}, {"device", "../mlx5_0"}, {"device", ""},
           {"ib_port", 0}, {"gid_index", 256}, {"local_addr", "node01"}, {"port", 0},
           {"size_bytes", (16 << 20) + 1}, {"iters", 0}, {"timeout_ms", 700000}}) {
    Json j = good;
    j[k] = v;
    bad(j);
  }
  Json j = good;
  j.erase("peer_addr");  // a client must know where the server is
  bad(j);
}

TEST(RdmaRcOp, LiveOpThroughTheSessionEndsWithoutHardware) {
  // The real table entry: on this machine (no HCA) both sides fail in setup or report the build
  // has no verbs; neither hangs, and the server is told by the client's failure frame.
  AgentSession a(kToken, 10000), b(kToken, 10000);
  a.handle(wire::Request{0, "set_peers", {{"addresses", {"127.0.0.1"}}}});  // the client's target
  uint16_t port = free_loopback_port();
  Json server, client;
  std::thread t([&] { server = b.handle(wire::Request{1, "rdma_rc", request("server", "send_lat", port, 2000)}); });
  client = a.handle(wire::Request{1, "rdma_rc", request("client", "send_lat", port, 2000)});
  t.join();
  for (const Json* d : {&server, &client}) {
    std::string st = (*d)["status"];
    EXPECT_TRUE(st == "failed" || st == "unavailable") << d->dump(2);
    EXPECT_FALSE((*d)["reason"].get<std::string>().empty());
  }
}

}  // namespace
}  // namespace fabkit::agent

namespace fabkit::pair {
namespace {

Json port(int n, const std::string& state, const std::string& ll, Json gid, double rate) {
  return {{"port", n}, {"state", state}, {"link_layer", ll}, {"roce_v2_gid_index", gid}, {"rate_gbps", rate}};
}

Json report(Json devices) { return {{"rdma", {{"devices", devices}}}}; }

TEST(RdmaRcPlan, PairsActivePortsWithTheSameLinkLayer) {
  Json a = report({{{"name", "mlx5_0"}, {"ports", {port(1, "ACTIVE", "InfiniBand", nullptr, 200)}}},
                   {{"name", "mlx5_1"}, {"ports", {port(1, "ACTIVE", "Ethernet", 3, 100)}}},
                   {{"name", "mlx5_2"}, {"ports", {port(1, "DOWN", "InfiniBand", nullptr, 200)}}}});
  Json b = report({{{"name", "mlx5_4"}, {"ports", {port(1, "ACTIVE", "Ethernet", 5, 25)}}},
                   {{"name", "mlx5_5"}, {"ports", {port(2, "ACTIVE", "InfiniBand", nullptr, 100)}}}});
  auto pairs = rc_port_pairs(a, b);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].hca_a, "mlx5_0");
  EXPECT_EQ(pairs[0].hca_b, "mlx5_5");
  EXPECT_EQ(pairs[0].port_b, 2);
  EXPECT_EQ(pairs[0].gid_index_a, -1);
  EXPECT_EQ(pairs[0].rate_gbps, 100.0);
  EXPECT_EQ(pairs[1].link_layer, "Ethernet");
  EXPECT_EQ(pairs[1].gid_index_a, 3);  // each side's own RoCE v2 index from its node probe
  EXPECT_EQ(pairs[1].gid_index_b, 5);
  EXPECT_TRUE(rc_port_pairs(a, Json()).empty());
  EXPECT_TRUE(rc_port_pairs(report(Json::array()), b).empty());
}

// A port with its GID table (the node report's gids[]): IB GID 0 = subnet prefix + port GUID;
// RoCE v2 GID 3 = IPv4-mapped address.
Json ib_port(int n, const std::string& prefix4, int guid) {
  char g[64];
  std::snprintf(g, sizeof g, "%s:0000:0000:0000:%04x", prefix4.c_str(), guid);
  return {{"port", n}, {"state", "ACTIVE"}, {"link_layer", "InfiniBand"}, {"roce_v2_gid_index", nullptr},
          {"rate_gbps", 400}, {"gids", {{{"index", 0}, {"gid", g}, {"type", "IB"}}}}};
}
Json roce_port(const std::string& ipv4) {
  unsigned a, b, c, d;
  std::sscanf(ipv4.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d);
  char g[64];
  std::snprintf(g, sizeof g, "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a, b, c, d);
  return {{"port", 1}, {"state", "ACTIVE"}, {"link_layer", "Ethernet"}, {"roce_v2_gid_index", 3},
          {"rate_gbps", 200}, {"gids", {{{"index", 3}, {"gid", g}, {"type", "RoCE v2"}}}}};
}
Json hca(int i, Json port) { return {{"name", "mlx5_" + std::to_string(i)}, {"ports", {port}}}; }

// 8 rails, one subnet each (an H100 SuperPOD's compute fabric): 8 same-rail pairs, the 56
// cross-rail combinations not applicable, none of them tested. B's HCAs are named in another
// order than their rails, so pairing by name would be wrong.
TEST(RdmaRails, EightRailsPairBySubnetPrefix) {
  Json a = Json::array(), b = Json::array();
  for (int i = 0; i < 8; ++i) {
    a.push_back(hca(i, ib_port(1, "fe80:0000:0000:000" + std::to_string(i), 0x100 + i)));
    b.push_back(hca(i, ib_port(1, "fe80:0000:0000:000" + std::to_string(7 - i), 0x200 + i)));
  }
  RailPlan plan = plan_rails(report(a), report(b));
  EXPECT_EQ(plan.method, "subnet");
  ASSERT_EQ(plan.pairs.size(), 8u);
  EXPECT_EQ(plan.cross_rail_not_applicable, 56);
  EXPECT_TRUE(plan.unpaired.empty());
  for (const auto& p : plan.pairs) {
    const int ia = p.hca_a.back() - '0', ib = p.hca_b.back() - '0';
    EXPECT_EQ(ia, 7 - ib) << p.hca_a << " <-> " << p.hca_b;  // same subnet, not same name
    EXPECT_EQ(p.rail, "fe80:0000:0000:000" + std::to_string(ia) + "::/64");
  }
}

// One subnet for every port (a single-plane fabric or a small cluster): subnets say nothing
// about rails, so the i-th port of A meets the i-th port of B.
TEST(RdmaRails, OneSubnetPairsByIndex) {
  Json a = Json::array(), b = Json::array();
  for (int i = 0; i < 4; ++i) {
    a.push_back(hca(i, ib_port(1, "fe80:0000:0000:0000", 0x100 + i)));
    b.push_back(hca(i, ib_port(1, "fe80:0000:0000:0000", 0x200 + i)));
  }
  RailPlan plan = plan_rails(report(a), report(b));
  EXPECT_EQ(plan.method, "index");
  ASSERT_EQ(plan.pairs.size(), 4u);
  EXPECT_EQ(plan.pairs[2].hca_a, "mlx5_2");
  EXPECT_EQ(plan.pairs[2].hca_b, "mlx5_2");
  EXPECT_EQ(plan.pairs[2].rail, "index 2");
  EXPECT_EQ(plan.cross_rail_not_applicable, 12);
}

// One subnet, HCAs named differently from their sockets on B: index order follows locality
// (NUMA node first), so the NUMA-0 HCA of A meets the NUMA-0 HCA of B.
TEST(RdmaRails, IndexOrderFollowsNumaLocality) {
  Json a = Json::array(), b = Json::array();
  for (int i = 0; i < 2; ++i) {
    a.push_back(hca(i, ib_port(1, "fe80:0000:0000:0000", 0x100 + i)));
    b.push_back(hca(i, ib_port(1, "fe80:0000:0000:0000", 0x200 + i)));
  }
  Json ra = report(a), rb = report(b);
  ra["locality"] = {{"nics", {{{"numa_node", 0}, {"rdma_devices", {"mlx5_0"}}}, {{"numa_node", 1}, {"rdma_devices", {"mlx5_1"}}}}}};
  rb["locality"] = {{"nics", {{{"numa_node", 1}, {"rdma_devices", {"mlx5_0"}}}, {{"numa_node", 0}, {"rdma_devices", {"mlx5_1"}}}}}};
  RailPlan plan = plan_rails(ra, rb);
  EXPECT_EQ(plan.method, "index");
  ASSERT_EQ(plan.pairs.size(), 2u);
  EXPECT_EQ(plan.pairs[0].hca_a, "mlx5_0");
  EXPECT_EQ(plan.pairs[0].hca_b, "mlx5_1");  // both on NUMA 0
  EXPECT_EQ(plan.pairs[1].hca_b, "mlx5_0");
}

// A has 4 rails, B 8 (a node type with fewer HCAs): the 4 shared rails are tested; B's other
// 4 ports have no partner and are listed as unpaired, not failed.
TEST(RdmaRails, MismatchedRailCountsLeaveTheExtraPortsUnpaired) {
  Json a = Json::array(), b = Json::array();
  for (int i = 0; i < 4; ++i) a.push_back(hca(i, roce_port("10.0." + std::to_string(i) + ".11")));
  for (int i = 0; i < 8; ++i) b.push_back(hca(i, roce_port("10.0." + std::to_string(i) + ".12")));
  RailPlan plan = plan_rails(report(a), report(b));
  EXPECT_EQ(plan.method, "subnet");
  ASSERT_EQ(plan.pairs.size(), 4u);
  EXPECT_EQ(plan.pairs[0].rail, "10.0.0.0/24");
  EXPECT_EQ(plan.pairs[0].gid_index_a, 3);
  ASSERT_EQ(plan.unpaired.size(), 4u);
  EXPECT_NE(plan.unpaired[0].find("B mlx5_4:1 (rail 10.0.4.0/24)"), std::string::npos) << plan.unpaired[0];
  EXPECT_EQ(plan.cross_rail_not_applicable, 28);
}

// A failing pair is named by its rail, so the broken plane (a switch, a cable) is obvious.
TEST(RdmaRails, AFailingRailIsNamed) {
  PairFacts f;
  f.host_a = "n1";
  f.host_b = "n2";
  RcPortPair p{"mlx5_3", "mlx5_3", 1, 1, 3, 3, "Ethernet", 200.0, "10.0.3.0/24"};
  Json bad = Json::array({{{"status", "failed"}, {"reason", "timeout"}}, {{"status", "failed"}, {"reason", "timeout"}}});
  f.rdma_rc.status = "ran";
  f.rdma_rc.pairs.push_back(combine_rc(p, bad, bad));
  auto out = judge_rdma_rc(f);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].code, "pair.rdma_rc_failed");
  EXPECT_EQ(out[0].subject.rfind("rail 10.0.3.0/24 (n1:mlx5_3:1<->n2:mlx5_3:1)", 0), 0u) << out[0].subject;
  EXPECT_EQ(to_json(f.rdma_rc)["pairs"][0]["rail"], "10.0.3.0/24");
}

TEST(RdmaRcPlan, RowsFindingsAndSection) {
  PairFacts f;
  f.host_a = "n1";
  f.host_b = "n2";
  RcPortPair p{"mlx5_0", "mlx5_1", 1, 1, -1, -1, "InfiniBand", 200.0};
  Json ok_client = {{"status", "ok"}, {"bw_gbps", 180.5}, {"path_mtu", 4096}, {"diagnoses", Json::array()}};
  Json ok_server = {{"status", "ok"}, {"bw_gbps", 180.5}, {"diagnoses", Json::array()}};
  Json lat_client = {{"status", "ok"}, {"lat_us_median", 1.5}, {"lat_us_p99", 2.5}, {"path_mtu", 4096},
                     {"diagnoses", Json::array()}};
  RcPairResult good = combine_rc(p, {ok_client, ok_server}, {lat_client, ok_server});
  EXPECT_EQ(good.status, "ok");
  EXPECT_EQ(good.bw_gbps, 180.5);
  EXPECT_EQ(good.lat_us_p99, 2.5);

  Json lid0 = {{"severity", "fail"}, {"code", "rdma.rc.lid_zero"}, {"subject", "mlx5_1:1"},
               {"message", "peer has LID 0"}, {"fix", "systemctl start opensm"}};
  Json failed = {{"status", "failed"}, {"reason", "not connecting: LID 0"}, {"diagnoses", {lid0}}};
  RcPairResult bad = combine_rc(p, {failed, failed}, {failed, failed});
  EXPECT_EQ(bad.status, "failed");
  EXPECT_FALSE(bad.bw_gbps);
  EXPECT_NE(bad.reason.find("write_bw A (client): not connecting"), std::string::npos) << bad.reason;

  f.rdma_rc.status = "ran";
  f.rdma_rc.pairs = {good, bad};
  auto fs = judge_rdma_rc(f);
  ASSERT_EQ(fs.size(), 1u);  // one per code and pair, not one per side and mode
  EXPECT_EQ(fs[0].code, "rdma.rc.lid_zero");
  EXPECT_EQ(fs[0].severity, Severity::kFail);
  EXPECT_EQ(fs[0].subject, "n1:mlx5_1:1");
  EXPECT_NE(fs[0].message.find("n1:mlx5_0:1<->n2:mlx5_1:1"), std::string::npos);

  Json undiagnosed = {{"status", "failed"}, {"reason", "timed out"}, {"diagnoses", Json::array()}};
  f.rdma_rc.pairs = {combine_rc(p, {undiagnosed, ok_server}, {lat_client, ok_server})};
  fs = judge_rdma_rc(f);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "pair.rdma_rc_failed");

  Json section = to_json(f.rdma_rc);
  EXPECT_EQ(section["status"], "ran");
  EXPECT_TRUE(section["pairs"][0]["bw_gbps"].is_null());
  EXPECT_EQ(section["pairs"][0]["lat_us_median"], 1.5);
  EXPECT_EQ(section["pairs"][0]["a"]["hca"], "mlx5_0");
  EXPECT_TRUE(section["pairs"][0]["lat_histogram"].is_null());  // the agent sent none
}

TEST(RdmaRcPlan, SendLatencyHistogramCheckedAndCarried) {
  RcPortPair p{"mlx5_0", "mlx5_1", 1, 1, -1, -1, "InfiniBand", 200.0};
  Json ok_bw = {{"status", "ok"}, {"bw_gbps", 180.5}, {"diagnoses", Json::array()}};
  LatencyHistogram h;
  for (int i = 0; i < kRcSendLatIters; ++i) h.add(1.2 + (i % 7) * 0.1);
  Json lat_client = {{"status", "ok"},
                     {"lat_us_median", 1.5},
                     {"lat_us_p99", 1.8},
                     {"lat_histogram", to_json(h)},
                     {"diagnoses", Json::array()}};
  RcPairResult good = combine_rc(p, {ok_bw, ok_bw}, {lat_client, ok_bw});
  EXPECT_EQ(good.status, "ok") << good.reason;
  ASSERT_TRUE(good.lat_histogram);
  EXPECT_EQ(good.lat_histogram->total(), static_cast<uint64_t>(kRcSendLatIters));
  RdmaRcFacts rc;
  rc.status = "ran";
  rc.pairs = {good};
  EXPECT_EQ(to_json(rc)["pairs"][0]["lat_histogram"], to_json(h));

  // A hostile or broken agent: one sample short of the iterations asked for.
  lat_client["lat_histogram"]["counts"][0] =
      lat_client["lat_histogram"]["counts"][0].get<int>() - 1;
  RcPairResult bad = combine_rc(p, {ok_bw, ok_bw}, {lat_client, ok_bw});
  EXPECT_EQ(bad.status, "failed");
  EXPECT_FALSE(bad.lat_histogram);
  EXPECT_FALSE(bad.lat_us_median);
  EXPECT_NE(bad.reason.find("send_lat A (client): lat_histogram.counts: the counts and overflow "
                            "sum to 999, not the 1000"),
            std::string::npos)
      << bad.reason;
}

TEST(RdmaRcPlan, NoPortPairIsReportedUnavailable) {
  PairFacts f;
  f.host_a = "n1";
  f.host_b = "n2";
  f.rdma_rc.status = "unavailable";
  f.rdma_rc.reason = "no active RDMA port pair";
  Report r = pair::build_pair_report(f);
  const Json& s = r.sections.at(0).facts;
  EXPECT_EQ(s["rdma_rc"]["status"], "unavailable");
  EXPECT_EQ(s["rdma_rc"]["reason"], "no active RDMA port pair");
  bool found = false;
  for (const auto& fd : r.findings) found = found || fd.code == "pair.rdma_rc_unavailable";
  EXPECT_TRUE(found);
}

TEST(PairSizes, DefaultSweepEndsAt256MiB) {
  auto s = default_pair_sizes();
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s.back(), 256ull << 20);
  EXPECT_EQ(s[s.size() - 2], 128ull << 20);
  for (size_t i = 1; i + 1 < s.size(); ++i) EXPECT_EQ(s[i], s[i - 1] * 4);
  EXPECT_EQ(s.size(), 14u);
}

// The RC test uses the GID index NCCL will use: NCCL_IB_GID_INDEX where the host's node report
// has it set, so a wrong one fails here, before a job does.
TEST(RdmaRcPlan, NcclIbGidIndexOnAHostIsTheIndexItsSideUses) {
  Json a = report({hca(0, roce_port("10.0.3.1"))});
  Json b = report({hca(0, roce_port("10.0.3.2"))});
  b["nccl_env"] = {{"variables", {{{"name", "NCCL_IB_GID_INDEX"}, {"value", "5"}}}}};
  auto pairs = rc_port_pairs(a, b);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].gid_index_a, 3);
  EXPECT_EQ(pairs[0].gid_index_b, 5);
  b["nccl_env"]["variables"][0]["value"] = "x5";  // not a number: the node check reports it
  EXPECT_EQ(rc_port_pairs(a, b)[0].gid_index_b, 3);
}

// A container on a shared-RDMA host sees every RDMA device; a port whose netdev is in another
// namespace is not this host's to test (docs/json/rdma.md netdev_place).
TEST(RdmaRcPlan, PortsWhoseNetdevIsInAnotherNamespaceAreNotPaired) {
  Json elsewhere = roce_port("10.0.3.9");
  elsewhere["netdev_place"] = "other_namespace";
  Json a = report({hca(0, elsewhere), hca(1, roce_port("10.0.3.1"))});
  Json b = report({hca(0, roce_port("10.0.3.2"))});
  auto pairs = rc_port_pairs(a, b);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].hca_a, "mlx5_1");
}

// Both agents diagnose a null GID; the finding names the host whose GID it is, once.
TEST(RdmaRcPlan, ANullGidIsNamedOnTheHostThatHasIt) {
  PairFacts f;
  f.host_a = "n1";
  f.host_b = "n2";
  RcPortPair p{"rxe0", "rxe0", 1, 1, 1, 5, "Ethernet", 2.5, "index 0"};
  auto diag = [](const char* code, const char* who) {
    return Json{{"status", "failed"}, {"reason", "not connecting"},
                {"diagnoses", {{{"severity", "fail"}, {"code", code}, {"subject", "rxe0:1"},
                                {"message", std::string(who) + " rxe0:1 has no usable GID at index 5"},
                                {"fix", "NCCL_IB_GID_INDEX"}}}}};
  };
  Json docs = Json::array({diag("rdma.rc.peer_null_gid", "peer"), diag("rdma.rc.null_gid", "local")});
  f.rdma_rc.status = "ran";
  f.rdma_rc.pairs.push_back(combine_rc(p, docs, docs));
  auto out = judge_rdma_rc(f);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].code, "rdma.rc.null_gid");
  EXPECT_EQ(out[0].subject, "n2:rxe0:1");
}

}  // namespace
}  // namespace fabkit::pair
