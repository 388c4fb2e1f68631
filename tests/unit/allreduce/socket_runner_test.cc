// The socket all-reduce, raw exchange and Gloo runners between threads on loopback, and their
// failure paths: wrong token, plan mismatch, nobody listening, a peer killed or stopped mid-run.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "fabric/allreduce/ring_schedule.h"
#include "fabric/allreduce/runners.h"
#include "loopback_harness.h"

namespace fabkit::fabric {
namespace {

using testing::free_port;
using testing::loopback_spec;
using testing::run_ranks;

// Odd sizes on purpose: one float, not a multiple of 4*world, not a multiple of the 256 KiB chunk.
const std::vector<uint64_t> kOddSizes = {4, 8, 4 * 1001, 256 * 1024 + 12, (1 << 20) + 4 * 3};

void expect_all_correct(const TransportRun& run, size_t n_sizes) {
  ASSERT_EQ(run.status, "ok") << run.reason;
  ASSERT_EQ(run.sizes.size(), n_sizes);
  for (const auto& s : run.sizes) {
    EXPECT_TRUE(s.correct) << run.transport << " size " << s.bytes;
    EXPECT_GT(s.time_us, 0);
    EXPECT_GT(s.busbw_gbps, 0);
  }
}

TEST(SocketAllreduce, TwoRanksOddSizesCorrect) {
  uint16_t port = free_port();
  auto runs = run_ranks({loopback_spec(0, port, kOddSizes), loopback_spec(1, port, kOddSizes)},
                        run_fabkit_socket_allreduce);
  for (const auto& r : runs) expect_all_correct(r, kOddSizes.size());
  EXPECT_EQ(runs[0].sizes[2].bytes, 4004u);
  // Two ranks: busbw equals algbw (2(n-1)/n = 1).
  EXPECT_DOUBLE_EQ(runs[0].sizes[3].busbw_gbps, runs[0].sizes[3].algbw_gbps);
}

TEST(SocketAllreduce, TwoRanksBothAlgorithmsAroundTheSwitchCorrect) {
  // The last whole-exchange size, the first ring size, and odd neighbours of both.
  const std::vector<uint64_t> sizes = {kWholeExchangeMaxBytes - 4, kWholeExchangeMaxBytes, kWholeExchangeMaxBytes + 4,
                                       kWholeExchangeMaxBytes + 4 * 3};
  uint16_t port = free_port();
  auto runs = run_ranks({loopback_spec(0, port, sizes), loopback_spec(1, port, sizes)}, run_fabkit_socket_allreduce);
  for (const auto& r : runs) {
    expect_all_correct(r, sizes.size());
    EXPECT_EQ(r.extra["algorithm_per_size"],
              Json::array({"whole-exchange", "whole-exchange", "ring", "ring"}));
  }
}

TEST(SocketAllreduce, ThreeRankRingOnLoopbackAddresses) {
  uint16_t port = free_port();
  std::vector<AllreduceSpec> specs;
  std::vector<uint64_t> sizes = {4, 4 * 1001, (1 << 20) + 4 * 7};
  for (int r = 0; r < 3; ++r) {
    auto s = loopback_spec(r, port, sizes);
    s.world_size = 3;
    s.ring_addrs = {"127.0.0.1", "127.0.0.2", "127.0.0.3"};
    specs.push_back(s);
  }
  auto runs = run_ranks(specs, run_fabkit_socket_allreduce);
  for (const auto& r : runs) expect_all_correct(r, sizes.size());
  EXPECT_NEAR(runs[0].sizes[2].busbw_gbps, runs[0].sizes[2].algbw_gbps * 4.0 / 3.0, 1e-9);
}

TEST(RawExchange, TwoRanksReceiveThePeersInput) {
  uint16_t port = free_port();
  auto runs = run_ranks({loopback_spec(0, port, kOddSizes), loopback_spec(1, port, kOddSizes)}, run_raw_exchange);
  for (const auto& r : runs) expect_all_correct(r, kOddSizes.size());
  EXPECT_EQ(runs[0].transport, "raw-exchange");
}

TEST(GlooTcp, TwoRanksOddSizesCorrect) {
  uint16_t port = free_port();
  auto runs = run_ranks({loopback_spec(0, port, kOddSizes), loopback_spec(1, port, kOddSizes)}, run_gloo_tcp_allreduce);
  for (const auto& r : runs) expect_all_correct(r, kOddSizes.size());
}

// The agent's progress notes come from on_size_done: once per size, in order, on every runner
// that runs the sweep in-process.
TEST(SweepProgress, EachSizeReportedOnceInOrder) {
  using Runner = TransportRun (*)(const AllreduceSpec&);
  for (Runner runner : {Runner(run_fabkit_socket_allreduce), Runner(run_raw_exchange),
                        Runner(run_gloo_tcp_allreduce)}) {
    uint16_t port = free_port();
    std::vector<std::pair<size_t, size_t>> seen;
    auto rank0 = loopback_spec(0, port, kOddSizes);
    rank0.on_size_done = [&seen](size_t done, size_t total) { seen.emplace_back(done, total); };
    auto runs = run_ranks({rank0, loopback_spec(1, port, kOddSizes)}, runner);
    ASSERT_EQ(runs[0].status, "ok") << runs[0].transport << ": " << runs[0].reason;
    std::vector<std::pair<size_t, size_t>> want;
    for (size_t i = 1; i <= kOddSizes.size(); ++i) want.emplace_back(i, kOddSizes.size());
    EXPECT_EQ(want, seen) << runs[0].transport;
  }
}

TEST(GlooIbverbs, NoRdmaDeviceIsUnavailableNotACrash) {
  auto run = run_gloo_ibverbs_allreduce(loopback_spec(0, free_port(), {64}), "mlx5_0", 1, 3);
  if (run.status == "ok" || run.extra.value("error", "") == "no_such_hca")
    GTEST_SKIP() << "this machine has an RDMA device; the no-device path is not reachable here";
  EXPECT_EQ(run.status, "unavailable");
  EXPECT_NE(run.reason.find("no RDMA device"), std::string::npos) << run.reason;
  EXPECT_EQ(run.extra["error"], "no_rdma_device");
}

TEST(SocketAllreduce, WrongTokenRejectedOnBothSides) {
  uint16_t port = free_port();
  // 1.5 s: rank 0 reports "token_rejected" only at its deadline, so the bad connector must have
  // arrived by then even on a loaded CI machine.
  auto good = loopback_spec(0, port, {64});
  good.timeout_ms = 1500;
  auto bad = loopback_spec(1, port, {64});
  bad.token =
      "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";  // another session's
  bad.timeout_ms = 1500;
  auto t0 = std::chrono::steady_clock::now();
  auto runs = run_ranks({good, bad}, run_fabkit_socket_allreduce);
  double elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(runs[1].status, "failed");
  EXPECT_EQ(runs[1].extra["error"], "token_rejected") << runs[1].reason;
  EXPECT_EQ(runs[0].status, "failed");
  EXPECT_EQ(runs[0].extra["error"], "token_rejected") << runs[0].reason;
  EXPECT_NE(runs[0].reason.find("wrong session token"), std::string::npos) << runs[0].reason;
  EXPECT_LT(elapsed_ms, 1500 + 2500);
}

TEST(SocketAllreduce, SilentConnectorDoesNotBlockTheRealPeer) {
  uint16_t port = free_port();
  auto rank0 = loopback_spec(0, port, {64});
  rank0.timeout_ms = 6000;
  auto rank1 = loopback_spec(1, port, {64});
  rank1.timeout_ms = 6000;
  std::thread squatter([&] {
    // Connects first and never says anything (a port scanner, a stale client).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // past the 2 s handshake budget
    ::close(fd);
  });
  TransportRun r1;
  std::thread late_peer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    r1 = run_fabkit_socket_allreduce(rank1);
  });
  TransportRun r0 = run_fabkit_socket_allreduce(rank0);
  late_peer.join();
  squatter.join();
  EXPECT_EQ(r0.status, "ok") << r0.reason;
  EXPECT_EQ(r1.status, "ok") << r1.reason;
}

TEST(SocketAllreduce, DifferentPlansAreNamed) {
  uint16_t port = free_port();
  auto runs = run_ranks({loopback_spec(0, port, {64}), loopback_spec(1, port, {128})}, run_fabkit_socket_allreduce);
  EXPECT_EQ(runs[0].extra["error"], "plan_mismatch") << runs[0].reason;
  EXPECT_EQ(runs[1].extra["error"], "plan_mismatch") << runs[1].reason;
}

TEST(SocketAllreduce, NobodyListeningIsConnectFailedWithinTimeout) {
  auto spec = loopback_spec(1, free_port(), {64});
  spec.timeout_ms = 400;
  auto t0 = std::chrono::steady_clock::now();
  auto run = run_fabkit_socket_allreduce(spec);
  double elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(run.extra["error"], "connect_failed") << run.reason;
  EXPECT_GE(elapsed_ms, 350);
  EXPECT_LT(elapsed_ms, 1400);
}

// The peer is a forked process running rank 1 on big sizes; we kill it mid-run (SIGKILL: the
// kernel closes its socket) or freeze it (SIGSTOP: the socket stays open, only the timeout helps).
TransportRun run_against_dying_peer(int signal_number, int timeout_ms, double* elapsed_ms) {
  uint16_t port = free_port();
  std::vector<uint64_t> sizes = {16 << 20};
  auto rank1 = loopback_spec(1, port, sizes);
  rank1.iters = 100000;  // runs until killed
  rank1.timeout_ms = 30000;
  pid_t pid = fork();
  if (pid == 0) {
    run_fabkit_socket_allreduce(rank1);
    _exit(0);
  }
  auto rank0 = loopback_spec(0, port, sizes);
  rank0.iters = 100000;
  rank0.timeout_ms = timeout_ms;
  std::chrono::steady_clock::time_point killed_at;
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    killed_at = std::chrono::steady_clock::now();
    kill(pid, signal_number);
  });
  TransportRun run = run_fabkit_socket_allreduce(rank0);
  auto done = std::chrono::steady_clock::now();
  killer.join();
  *elapsed_ms = std::chrono::duration<double, std::milli>(done - killed_at).count();
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return run;
}

TEST(SocketAllreduce, PeerKilledMidRunIsPeerClosed) {
  double elapsed_ms = 0;
  auto run = run_against_dying_peer(SIGKILL, 3000, &elapsed_ms);
  EXPECT_EQ(run.status, "failed");
  EXPECT_EQ(run.extra["error"], "peer_closed") << run.reason;
  EXPECT_NE(run.reason.find("died"), std::string::npos) << run.reason;
  EXPECT_LT(elapsed_ms, 3000) << "a closed socket is seen at once, not after the timeout";
}

TEST(SocketAllreduce, PeerFrozenMidRunIsPeerTimeout) {
  double elapsed_ms = 0;
  auto run = run_against_dying_peer(SIGSTOP, 700, &elapsed_ms);
  EXPECT_EQ(run.status, "failed");
  // The timeout counts from the peer's last byte, which may precede the SIGSTOP on a loaded
  // machine, so only the upper bound is a property: named as a timeout, and no hang.
  EXPECT_EQ(run.extra["error"], "peer_timeout") << run.reason;
  EXPECT_LT(elapsed_ms, 700 + 2000);
}

}  // namespace
}  // namespace fabkit::fabric
