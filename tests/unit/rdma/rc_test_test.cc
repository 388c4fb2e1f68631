#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "fabric/rdma/rc_types.h"
#include "tests/support/ttar.h"
#include "verbs/fake_verbs_api.h"

namespace fabkit::fabric::rdma {
namespace {

using verbs::FakeVerbsApi;

std::unique_ptr<FakeVerbsApi> fake(const std::string& fixture) {
  std::ifstream in(testing::project_fixtures() / "rdma" / fixture);
  return std::make_unique<FakeVerbsApi>(verbs::load_fake_devices(Json::parse(in)));
}

// Both sides' endpoint info meet here, as the pair agent's TCP channel would carry it; one slot
// per call, since run_rc_test exchanges twice (info, then the ready barrier).
struct Rendezvous {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<RcEndpointInfo> from_server, from_client;
};

RcExchange exchange_for(Rendezvous& rv, bool is_server,
                        std::function<void(RcEndpointInfo&)> tamper = {}) {
  return [&rv, is_server, tamper](const RcEndpointInfo& mine) -> Expected<RcEndpointInfo> {
    std::unique_lock<std::mutex> l(rv.mu);
    auto& own = is_server ? rv.from_server : rv.from_client;
    auto& theirs = is_server ? rv.from_client : rv.from_server;
    own.push_back(endpoint_from_json(to_json(mine)));  // through JSON, as on the wire
    size_t round = own.size();
    rv.cv.notify_all();
    if (!rv.cv.wait_for(l, std::chrono::seconds(3), [&] { return theirs.size() >= round; }))
      return SysError{"exchange", ETIMEDOUT, "peer"};
    RcEndpointInfo r = theirs[round - 1];
    if (tamper) tamper(r);
    return r;
  };
}

struct PairResult {
  RcTestResult server, client;
};

PairResult run_pair(FakeVerbsApi& api, RcTestSpec server, RcTestSpec client,
                    std::function<void(RcEndpointInfo&)> client_tamper = {}) {
  Rendezvous rv;
  server.role = RcRole::kServer;
  client.role = RcRole::kClient;
  PairResult out;
  std::thread t([&] { out.server = run_rc_test(api, server, exchange_for(rv, true)); });
  out.client = run_rc_test(api, client, exchange_for(rv, false, client_tamper));
  t.join();
  return out;
}

RcTestSpec spec(const std::string& dev, RcMode mode) {
  RcTestSpec s;
  s.device = dev;
  s.mode = mode;
  s.size_bytes = 4096;
  s.iters = 50;
  s.warmup_iters = 5;
  s.tx_depth = 8;
  s.timeout_ms = 2000;
  return s;
}

const Finding* find(const std::vector<Finding>& fs, const std::string& code) {
  for (const auto& f : fs)
    if (f.code == code) return &f;
  return nullptr;
}

size_t count(const std::vector<std::string>& calls, const std::string& entry) {
  return static_cast<size_t>(std::count(calls.begin(), calls.end(), entry));
}

TEST(RcTest, WriteBandwidthOverInfiniBand) {
  auto api = fake("cx6_ib_hdr.json");
  auto r = run_pair(*api, spec("mlx5_0", RcMode::kWriteBw), spec("mlx5_1", RcMode::kWriteBw));
  ASSERT_EQ(r.client.status, "ok") << r.client.reason;
  ASSERT_EQ(r.server.status, "ok") << r.server.reason;
  EXPECT_EQ(r.client.path_mtu, 4096);
  EXPECT_EQ(r.client.bytes, 4096u * 50);
  ASSERT_TRUE(r.client.bw_gbps);
  EXPECT_GT(*r.client.bw_gbps, 0.0);
  ASSERT_TRUE(r.server.bw_gbps);
  EXPECT_DOUBLE_EQ(*r.server.bw_gbps, *r.client.bw_gbps);  // the server reports the client's timing
  EXPECT_EQ(r.server.data_verified, true);
  EXPECT_TRUE(r.client.diagnoses.empty());

  // rc_pingpong's masks, accepted by the fake's kernel-style check, and a clean reverse teardown
  // (the fake answers EBUSY to a CQ/PD/context destroyed while something still uses it).
  auto calls = api->calls();
  EXPECT_EQ(count(calls, "ibv_modify_qp INIT mask=0x39"), 2u);
  EXPECT_EQ(count(calls, "ibv_modify_qp RTR mask=0x129181"), 2u);
  EXPECT_EQ(count(calls, "ibv_modify_qp RTS mask=0x12e01"), 2u);
  for (const char* c : {"ibv_destroy_qp rc=0", "ibv_destroy_cq rc=0", "ibv_dereg_mr rc=0",
                        "ibv_dealloc_pd rc=0", "ibv_close_device rc=0"})
    EXPECT_EQ(count(calls, c), 2u) << c;
}

TEST(RcTest, SendLatencyOverRoceV2) {
  auto api = fake("cx5_roce_v2.json");
  auto s = spec("mlx5_0", RcMode::kSendLat), c = spec("mlx5_1", RcMode::kSendLat);
  s.size_bytes = c.size_bytes = 64;
  auto r = run_pair(*api, s, c);
  ASSERT_EQ(r.client.status, "ok") << r.client.reason << " / server: " << r.server.reason;
  ASSERT_EQ(r.server.status, "ok") << r.server.reason;
  EXPECT_EQ(r.client.path_mtu, 1024);
  ASSERT_TRUE(r.client.lat_us_median && r.client.lat_us_p99);
  EXPECT_GT(*r.client.lat_us_median, 0.0);
  EXPECT_GE(*r.client.lat_us_p99, *r.client.lat_us_median);
  EXPECT_FALSE(r.server.lat_us_median);  // the client measures
  // Every timed half round trip is in the histogram, the median in the bucket the histogram says.
  ASSERT_TRUE(r.client.lat_histogram);
  EXPECT_EQ(r.client.lat_histogram->total(), static_cast<uint64_t>(c.iters));
  int med = r.client.lat_histogram->percentile_bucket(0.5);
  EXPECT_LE(LatencyHistogram::lower_edge(med), *r.client.lat_us_median);
  EXPECT_LT(*r.client.lat_us_median, LatencyHistogram::lower_edge(med + 1));
  EXPECT_FALSE(r.server.lat_histogram);
  EXPECT_EQ(to_json(r.client)["lat_histogram"], fabkit::to_json(*r.client.lat_histogram));
}

// The address vector NCCL would use: hop limit 255 (1 made routed RoCE v2 fail), and the job's
// QoS class from NCCL_IB_TC / NCCL_IB_SL.
TEST(RcTest, RoceAddressVectorUsesNcclsHopLimitAndTheJobsTrafficClass) {
  auto api = fake("cx5_roce_v2.json");
  auto s = spec("mlx5_0", RcMode::kSendLat), c = spec("mlx5_1", RcMode::kSendLat);
  s.size_bytes = c.size_bytes = 64;
  s.traffic_class = c.traffic_class = 106;
  s.service_level = c.service_level = 3;
  auto r = run_pair(*api, s, c);
  ASSERT_EQ(r.client.status, "ok") << r.client.reason;
  size_t n = 0;
  for (const auto& call : api->calls())
    if (call.rfind("ibv_modify_qp RTR av sl=3 grh hop_limit=255 traffic_class=106 sgid_index=", 0) == 0) ++n;
  EXPECT_EQ(n, 2u) << ::testing::PrintToString(api->calls());
}

TEST(RcServiceClass, FromNcclIbTcAndSlWithRangeChecks) {
  std::string err;
  auto d = ib_service_class_from_env({}, &err);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->traffic_class, 0);
  EXPECT_EQ(d->service_level, 0);
  auto v = ib_service_class_from_env({{"NCCL_IB_TC", "106"}, {"NCCL_IB_SL", "15"}}, &err);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->traffic_class, 106);
  EXPECT_EQ(v->service_level, 15);
  EXPECT_FALSE(ib_service_class_from_env({{"NCCL_IB_SL", "16"}}, &err));
  EXPECT_NE(err.find("NCCL_IB_SL=16 is not an integer in 0..15"), std::string::npos) << err;
  EXPECT_FALSE(ib_service_class_from_env({{"NCCL_IB_TC", "0x6a"}}, &err));
  EXPECT_NE(err.find("NCCL_IB_TC=0x6a"), std::string::npos) << err;
}

TEST(RcTest, MtuMismatchUsesTheMinimum) {
  auto api = fake("cx6_ib_hdr.json");
  api->port("mlx5_1", 1)->attr.active_mtu = verbs::Mtu::k2048;
  auto r = run_pair(*api, spec("mlx5_0", RcMode::kWriteBw), spec("mlx5_1", RcMode::kWriteBw));
  ASSERT_EQ(r.client.status, "ok") << r.client.reason;
  ASSERT_EQ(r.server.status, "ok") << r.server.reason;
  EXPECT_EQ(r.server.path_mtu, 2048);
  const Finding* f = find(r.server.diagnoses, "rdma.rc.mtu_mismatch");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NE(f->message.find("uses 2048"), std::string::npos);
}

TEST(RcTest, LidZeroStopsBothSidesBeforeConnecting) {
  auto api = fake("cx6_ib_hdr.json");
  api->port("mlx5_1", 1)->attr.lid = 0;
  auto r = run_pair(*api, spec("mlx5_0", RcMode::kWriteBw), spec("mlx5_1", RcMode::kWriteBw));
  EXPECT_EQ(r.client.status, "failed");
  EXPECT_EQ(r.server.status, "failed");
  const Finding* f = find(r.client.diagnoses, "rdma.rc.lid_zero");
  ASSERT_TRUE(f);
  EXPECT_NE(f->fix.find("systemctl start opensm"), std::string::npos);
  EXPECT_TRUE(find(r.server.diagnoses, "rdma.rc.lid_zero"));
  EXPECT_EQ(count(api->calls(), "ibv_modify_qp RTR mask=0x129181"), 0u);
}

TEST(RcTest, RoceV1AgainstV2IsDiagnosed) {
  auto api = fake("cx5_roce_v2.json");
  auto c = spec("mlx5_1", RcMode::kSendLat);
  c.gid_index = 2;  // RoCE v1
  auto r = run_pair(*api, spec("mlx5_0", RcMode::kSendLat), c);
  const Finding* f = find(r.client.diagnoses, "rdma.rc.gid_type_mismatch");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_NE(f->message.find("RoCE v1"), std::string::npos);
  EXPECT_EQ(r.server.status, "failed");
}

TEST(RcTest, NullGidAtTheChosenIndex) {
  auto api = fake("cx5_roce_v2.json");
  auto c = spec("mlx5_1", RcMode::kSendLat);
  c.gid_index = 7;  // empty slot
  auto r = run_pair(*api, spec("mlx5_0", RcMode::kSendLat), c);
  // The client's own GID is null; the server sees it as its peer's.
  EXPECT_TRUE(find(r.client.diagnoses, "rdma.rc.null_gid"));
  EXPECT_TRUE(find(r.server.diagnoses, "rdma.rc.peer_null_gid"));
  EXPECT_FALSE(find(r.server.diagnoses, "rdma.rc.null_gid"));
}

TEST(RcTest, RegMrFailureGivesTheMemlockFix) {
  auto api = fake("cx6_ib_hdr.json");
  api->fail_next("ibv_reg_mr", ENOMEM);
  bool exchanged = false;
  auto r = run_rc_test(*api, spec("mlx5_0", RcMode::kWriteBw),
                       [&](const RcEndpointInfo&) -> Expected<RcEndpointInfo> {
                         exchanged = true;
                         return SysError{"exchange", ECANCELED, "test"};
                       });
  EXPECT_FALSE(exchanged);
  EXPECT_EQ(r.status, "failed");
  EXPECT_NE(r.reason.find("ibv_reg_mr"), std::string::npos);
  const Finding* f = find(r.diagnoses, "rdma.rc.reg_mr_failed");
  ASSERT_TRUE(f);
  EXPECT_NE(f->fix.find("memlock unlimited"), std::string::npos);
  auto calls = api->calls();
  EXPECT_EQ(count(calls, "ibv_dealloc_pd rc=0"), 1u);
  EXPECT_EQ(count(calls, "ibv_close_device rc=0"), 1u);
}

TEST(RcTest, UnreachablePeerQpEndsInRetryExceeded) {
  auto api = fake("cx6_ib_hdr.json");
  auto s = spec("mlx5_0", RcMode::kWriteBw), c = spec("mlx5_1", RcMode::kWriteBw);
  s.timeout_ms = 300;
  auto r = run_pair(*api, s, c, [](RcEndpointInfo& peer) { peer.qpn += 1000; });
  EXPECT_EQ(r.client.status, "failed");
  EXPECT_TRUE(find(r.client.diagnoses, "rdma.rc.retry_exceeded")) << r.client.reason;
  EXPECT_EQ(r.server.status, "failed");
  EXPECT_NE(r.server.reason.find("no progress for 300 ms: 0 of 3 progress marks"), std::string::npos)
      << r.server.reason;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Two rxe ends whose packets go nowhere (issue 37: two network namespaces of one kernel) connect
// and then move nothing. Each side's first wait for a completion ends after timeout_ms, named
// rdma.rc.no_progress with how many of how many completions had arrived.
TEST(RcTest, QpThatMovesNoDataIsNamedWithinTheTimeout) {
  auto api = fake("cx5_roce_v2.json");
  api->stall_completions(true);
  auto s = spec("mlx5_0", RcMode::kWriteBw), c = spec("mlx5_1", RcMode::kWriteBw);
  s.timeout_ms = c.timeout_ms = 300;
  s.budget_ms = 600;
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_pair(*api, s, c);
  EXPECT_LT(seconds_since(t0), 3.0);
  EXPECT_EQ(r.client.status, "failed");
  const Finding* f = find(r.client.diagnoses, "rdma.rc.no_progress");
  ASSERT_TRUE(f) << r.client.reason;
  EXPECT_EQ(f->severity, Severity::kFail);
  // The signaled writes (every tx_depth-th = 8th, and the last of a run): 1 of the 5 warm-up
  // writes, 7 of the 50 timed, and the "done" message.
  EXPECT_NE(f->message.find("0 of 9 send completions"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("no completion for 3"), std::string::npos) << f->message;
  EXPECT_FALSE(f->fix.empty());
  EXPECT_EQ(r.server.status, "failed");

  // The same on the latency test, on both sides: the server waits for the client's first SEND.
  api->stall_completions(true);
  s = spec("mlx5_0", RcMode::kSendLat);
  c = spec("mlx5_1", RcMode::kSendLat);
  s.timeout_ms = c.timeout_ms = 300;
  r = run_pair(*api, s, c);
  for (const auto* side : {&r.client, &r.server}) {
    const Finding* lf = find(side->diagnoses, "rdma.rc.no_progress");
    ASSERT_TRUE(lf) << side->reason;
    EXPECT_NE(lf->message.find("0 of 55 receive completions"), std::string::npos) << lf->message;
  }
}

// Completions that trickle in, each well inside timeout_ms, would take iters x the delay; the
// test's budget ends it by name (rdma.rc.too_slow), counting what arrived.
TEST(RcTest, QpThatMovesDataTooSlowlyEndsAtTheBudget) {
  auto api = fake("cx5_roce_v2.json");
  api->set_completion_delay_ms(20);
  auto s = spec("mlx5_0", RcMode::kWriteBw), c = spec("mlx5_1", RcMode::kWriteBw);
  s.iters = c.iters = 200;
  s.tx_depth = c.tx_depth = 1;  // one write in flight: 206 completions x 20 ms = 4 s unbounded
  s.timeout_ms = c.timeout_ms = 1000;
  s.budget_ms = c.budget_ms = 600;
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_pair(*api, s, c);
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(r.client.status, "failed");
  const Finding* f = find(r.client.diagnoses, "rdma.rc.too_slow");
  ASSERT_TRUE(f) << r.client.reason;
  EXPECT_EQ(f->severity, Severity::kWarn);
  EXPECT_NE(f->message.find("budget of 600 ms"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find(" of 206 send completions"), std::string::npos) << f->message;
  EXPECT_NE(f->fix.find("--rc-iters"), std::string::npos);
  EXPECT_FALSE(find(r.client.diagnoses, "rdma.rc.no_progress"));
  EXPECT_EQ(r.server.status, "failed");
  EXPECT_NE(r.server.reason.find("budget of 600 ms"), std::string::npos) << r.server.reason;
}

// A side that gives up tells its peer (the agent sends an error frame on the endpoint channel),
// which then stops at once rather than at its budget.
TEST(RcTest, PeerThatStoppedEndsTheWaitBeforeTheBudget) {
  auto api = fake("cx6_ib_hdr.json");
  auto s = spec("mlx5_0", RcMode::kWriteBw), c = spec("mlx5_1", RcMode::kWriteBw);
  c.timeout_ms = 300;
  s.timeout_ms = 300;
  s.budget_ms = 20000;
  std::atomic<bool> client_done{false};
  s.peer_stopped = [&]() -> std::string { return client_done ? "peer: client gave up" : ""; };
  Rendezvous rv;
  s.role = RcRole::kServer;
  c.role = RcRole::kClient;
  RcTestResult server;
  auto t0 = std::chrono::steady_clock::now();
  std::thread t([&] { server = run_rc_test(*api, s, exchange_for(rv, true)); });
  RcTestResult client = run_rc_test(*api, c, exchange_for(rv, false, [](RcEndpointInfo& peer) {
                                      peer.qpn += 1000;  // unreachable: RETRY_EXC_ERR
                                    }));
  client_done = true;
  t.join();
  EXPECT_EQ(client.status, "failed");
  EXPECT_EQ(server.status, "failed");
  EXPECT_NE(server.reason.find("the peer stopped the test (peer: client gave up)"), std::string::npos)
      << server.reason;
  EXPECT_LT(seconds_since(t0), 5.0);
}

// A link that stops moving in the middle of the writes (a netdev down, the peer's device gone,
// RoCE dropped on the wire): both sides end within their per-wait bound and say how far it got.
TEST(RcTest, WritesThatStopMidwayFailWithinTheBoundSayingHowFarTheyGot) {
  auto api = fake("cx6_ib_hdr.json");
  auto s = spec("mlx5_0", RcMode::kWriteBw), c = spec("mlx5_1", RcMode::kWriteBw);
  s.timeout_ms = c.timeout_ms = 300;
  s.iters = c.iters = 400;
  api->stall_after_sends(40);  // the first 2 marks (16 writes each) and a few writes more
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_pair(*api, s, c);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  EXPECT_LT(ms.count(), 2000);
  EXPECT_EQ(r.client.status, "failed");
  EXPECT_NE(r.client.reason.find("of 405 RDMA writes completed"), std::string::npos) << r.client.reason;
  EXPECT_EQ(r.server.status, "failed");
  EXPECT_NE(r.server.reason.find("no progress for 300 ms: 2 of 25 progress marks"), std::string::npos)
      << r.server.reason;
}

// The server's wait is per progress mark, not a total that assumes a link rate: a run far longer
// than one timeout still completes while the writes keep moving.
TEST(RcTest, AServerWaitsAsLongAsTheWritesKeepMoving) {
  auto api = fake("cx6_ib_hdr.json");
  auto s = spec("mlx5_0", RcMode::kWriteBw), c = spec("mlx5_1", RcMode::kWriteBw);
  s.timeout_ms = c.timeout_ms = 100;
  s.iters = c.iters = 64;
  s.warmup_iters = c.warmup_iters = 0;
  api->delay_sends(5);  // 64 writes: ~320 ms in all, a mark every ~80 ms
  s.budget_ms = c.budget_ms = 10000;  // what is tested is the per-mark wait, not the budget
  auto r = run_pair(*api, s, c);
  EXPECT_EQ(r.client.status, "ok") << r.client.reason;
  EXPECT_EQ(r.server.status, "ok") << r.server.reason;
  EXPECT_EQ(r.server.data_verified, true);
}

TEST(RcTest, PortNotActive) {
  auto api = fake("cx6_ib_hdr.json");
  api->port("mlx5_0", 1)->attr.state = verbs::PortState::kDown;
  auto r = run_rc_test(*api, spec("mlx5_0", RcMode::kWriteBw),
                       [](const RcEndpointInfo&) -> Expected<RcEndpointInfo> {
                         return SysError{"exchange", ECANCELED, "test"};
                       });
  EXPECT_TRUE(find(r.diagnoses, "rdma.rc.port_not_active"));
  EXPECT_EQ(count(api->calls(), "ibv_open_device mlx5_0"), 0u);
}

TEST(FakeVerbs, RejectsAnIncompleteInitMask) {
  auto api = fake("cx6_ib_hdr.json");
  auto ctx = api->open_device("mlx5_0");
  auto pd = api->alloc_pd(value(ctx));
  auto cq = api->create_cq(value(ctx), 4);
  uint32_t qpn = 0;
  auto qp = api->create_rc_qp(value(pd), value(cq), 4, 4, &qpn);
  verbs::QpAttr a;
  a.qp_state = verbs::QpState::kInit;
  auto m = api->modify_qp(value(qp), a, verbs::kQpState | verbs::kQpPkeyIndex | verbs::kQpAccessFlags);
  ASSERT_FALSE(ok(m));
  EXPECT_EQ(error(m).err, EINVAL);
  a.qp_state = verbs::QpState::kRtr;  // RESET -> RTR is no transition
  EXPECT_FALSE(ok(api->modify_qp(value(qp), a, 0x129181)));
  EXPECT_EQ(api->destroy_cq(value(cq)), EBUSY);  // the QP still uses it
  EXPECT_EQ(api->destroy_qp(value(qp)), 0);
  EXPECT_EQ(api->destroy_cq(value(cq)), 0);
}

TEST(RcEndpointJson, RoundTripAndBadFields) {
  RcEndpointInfo e;
  e.lid = 12;
  e.qpn = 0x123;
  e.psn = 0xabcdef;
  e.gid = *verbs::parse_gid("::ffff:198.18.1.5");
  e.gid_index = 3;
  e.mtu = 1024;
  e.rkey = 0xdeadbeef;
  e.addr = 0x7f0000001000;
  e.link_layer = "Ethernet";
  e.gid_type = "RoCE v2";
  e.device = "mlx5_0:1";
  RcEndpointInfo back = endpoint_from_json(to_json(e));
  EXPECT_EQ(back.qpn, e.qpn);
  EXPECT_EQ(back.gid, e.gid);
  EXPECT_EQ(back.addr, e.addr);
  EXPECT_EQ(back.rkey, e.rkey);
  Json j = to_json(e);
  j["qpn"] = 1 << 25;
  EXPECT_THROW(endpoint_from_json(j), std::invalid_argument);
  j = to_json(e);
  j["gid"] = "nonsense";
  try {
    endpoint_from_json(j);
    FAIL();
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("'gid' = 'nonsense'"), std::string::npos);
  }
}

TEST(RcStats, NearestRankPercentiles) {
  EXPECT_FALSE(percentile({}, 50));
  EXPECT_EQ(percentile({3, 1, 2}, 50), 2.0);
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(percentile(v, 99), 99.0);
  EXPECT_EQ(percentile(v, 100), 100.0);
  EXPECT_EQ(wc_status_name(12), "RETRY_EXC_ERR (12)");
  EXPECT_EQ(wc_status_name(99), "unknown (99)");
}

}  // namespace
}  // namespace fabkit::fabric::rdma
