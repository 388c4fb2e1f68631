// Two sides of the RDM test in one process over Debian's libfabric tcp provider on 127.0.0.1,
// their addresses swapped through a promise pair as the agents' channel would.
#include "fabric/ofi_rdm/ofi_rdm_test.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <iostream>
#include <thread>

#include "fabkit/config.h"

namespace fabkit::fabric::ofi_rdm {
namespace {

struct Swapper {
  std::promise<std::string> to_server, to_client;
  AddressSwap server() {
    return [this](const std::string& mine) {
      to_client.set_value(mine);
      return to_server.get_future().get();
    };
  }
  AddressSwap client() {
    return [this](const std::string& mine) {
      to_server.set_value(mine);
      return to_client.get_future().get();
    };
  }
};

OfiRdmSpec small(bool server) {
  OfiRdmSpec s;
  s.provider = "tcp";
  s.server = server;
  s.local_node = "127.0.0.1";
  s.bw_size_bytes = 256 << 10;
  s.bw_messages = 64;
  s.window = 8;
  s.lat_iters = 200;
  s.warmup_iters = 10;
  s.timeout_ms = 5000;
  return s;
}

#if FABKIT_HAVE_LIBFABRIC
TEST(OfiRdm, TcpProviderMovesBytesAndMeasuresBandwidthAndLatency) {
  Swapper sw;
  Environment env = Environment::from_process();
  OfiRdmResult server_result;
  std::thread server([&] { server_result = run_ofi_rdm(small(true), env, sw.server()); });
  OfiRdmResult client = run_ofi_rdm(small(false), env, sw.client());
  server.join();
  ASSERT_EQ(client.status, "ok") << client.code << ": " << client.reason;
  ASSERT_EQ(server_result.status, "ok") << server_result.code << ": " << server_result.reason;
  EXPECT_EQ(client.provider, "tcp;ofi_rxm");
  EXPECT_EQ(client.domain, "lo");
  EXPECT_GT(client.bandwidth_gbps, 0.0);
  EXPECT_GT(client.latency_us, 0.0);
  std::cout << "tcp over lo: " << client.bandwidth_gbps << " Gb/s at 256 KiB, " << client.latency_us
            << " us half round trip at 8 B\n";
  EXPECT_GT(server_result.latency_us, 0.0);
  // The server received every bandwidth message and every ping, and sent a pong per ping and
  // the acknowledgement.
  const uint64_t pings = 210 * 8;
  EXPECT_EQ(server_result.bytes_moved, 64ull * (256 << 10) + pings + pings + 8);
  EXPECT_EQ(client.bytes_moved, server_result.bytes_moved);
}

TEST(OfiRdm, PeerThatNeverAnswersEndsInANamedTimeout) {
  // The peer opens its endpoint and hands its address over, then never posts, sends or
  // progresses (its swap holds it) until well after the client's deadline.
  Swapper sw;
  Environment env = Environment::from_process();
  std::thread silent([&] {
    OfiRdmSpec s = small(true);
    run_ofi_rdm(s, env, [&](const std::string& mine) -> std::string {
      sw.to_client.set_value(mine);
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      throw std::runtime_error("the test's silent peer gives up");
    });
  });
  OfiRdmSpec c = small(false);
  c.timeout_ms = 1000;
  auto t0 = std::chrono::steady_clock::now();
  OfiRdmResult r =
      run_ofi_rdm(c, env, [&](const std::string&) { return sw.to_client.get_future().get(); });
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  silent.join();
  EXPECT_EQ(r.status, "failed");
  EXPECT_EQ(r.code, "timeout") << r.reason;
  // rxm over tcp refuses the first send (EAGAIN) while its connection waits on the silent peer:
  // "the send queue stayed full for 1000 ms while waiting for round trip 1 of ..."; a provider
  // that takes the send waits for the pong instead: "no completion ... within 1000 ms while ...".
  EXPECT_NE(r.reason.find("1000 ms while waiting for round trip 1 of"), std::string::npos)
      << r.reason;
  EXPECT_LT(s, 2.4);  // the deadline, not the silent peer's 2.5 s, ended it
}

TEST(OfiRdm, UnknownProviderIsUnavailableNamingIt) {
  OfiRdmSpec s = small(false);
  s.provider = "no-such-provider";
  OfiRdmResult r = run_ofi_rdm(s, Environment::from_process(),
                               [](const std::string&) -> std::string { return ""; });
  EXPECT_EQ(r.status, "unavailable");
  EXPECT_EQ(r.code, "no_provider");
  EXPECT_NE(r.reason.find("'no-such-provider'"), std::string::npos) << r.reason;
}
#else
TEST(OfiRdm, BuildWithoutLibfabricSaysSo) {
  OfiRdmResult r = run_ofi_rdm(small(false), Environment::from_process(),
                               [](const std::string&) -> std::string { return ""; });
  EXPECT_EQ(r.status, "unavailable");
  EXPECT_EQ(r.reason.rfind("not built with libfabric", 0), 0u) << r.reason;
}
#endif

}  // namespace
}  // namespace fabkit::fabric::ofi_rdm
