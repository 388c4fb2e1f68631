// The cause a Gloo timeout hides: rank 1 (a child process) dies while rank 0's send to it is being
// written. Gloo's pair records the socket error at once but wakes that send only at the timeout;
// recorded_pair_error must find the error the timeout hid (what gloo_runners.cc reports).
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "fabric/allreduce/gloo_errors.h"
#include "tests/support/ttar.h"

namespace fabkit::fabric {
namespace {

constexpr size_t kBytes = 64u << 20;  // far more than both socket buffers hold

std::shared_ptr<gloo::rendezvous::Context> connect_rank(int rank, const std::string& store_dir) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(store_dir);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, 2);
  context->setTimeout(std::chrono::milliseconds(10000));
  context->connectFullMesh(store, device);
  return context;
}

// Rank 1 in a child process: connected through the file store, then `then(context)`; exits.
template <typename Then>
pid_t fork_rank1(const std::string& store_dir, Then then) {
  pid_t child = fork();
  if (child != 0) return child;
  try {
    auto context = connect_rank(1, store_dir);
    then(*context);
  } catch (...) {
    _exit(3);
  }
  _exit(0);
}

TEST(GlooPairError, PeerKilledMidSendIsFoundBehindTheTimeout) {
  fabkit::testing::TempDir dir("gloo-pair-error");
  const std::string store_dir = dir.path().string();
  // Rank 1: post the receive (its notice is on the wire when recv returns), then stop reading.
  pid_t child = fork_rank1(store_dir, [](gloo::Context& context) {
    std::vector<char> in(kBytes);
    auto buffer = context.createUnboundBuffer(in.data(), in.size());
    buffer->recv(0, /*slot=*/1);
    raise(SIGSTOP);
  });
  ASSERT_GE(child, 0);
  auto context = connect_rank(0, store_dir);
  std::vector<char> out(kBytes, 'x');
  auto buffer = context->createUnboundBuffer(out.data(), out.size());
  buffer->send(1, /*slot=*/1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status)) << "rank 1 ended before it stopped (status " << status << ")";
  // Rank 0's device thread fills both socket buffers; the send stays in flight.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(child, SIGKILL);  // unread data at the close: the kernel resets the connection
  waitpid(child, &status, 0);
  auto killed = std::chrono::steady_clock::now();
  std::string raised;
  try {
    buffer->waitSend(std::chrono::milliseconds(2000));
  } catch (const gloo::Exception& e) {
    raised = e.what();
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  // Gloo's behaviour this works around: the send hears of the dead peer only at its timeout. If a
  // newer Gloo wakes it with the socket error, recorded_pair_error is no longer needed.
  EXPECT_EQ(gloo_error_kind(raised), "peer_timeout") << raised;
  EXPECT_GE(s, 1.9) << raised;
  const std::string cause = recorded_pair_error(*context, 0);
  EXPECT_EQ(gloo_error_kind(cause), "peer_closed") << cause;
  EXPECT_NE(cause.find("by peer"), std::string::npos) << cause;
}

TEST(GlooPairError, ATimeoutWithTheConnectionUpHasNoHiddenCause) {
  fabkit::testing::TempDir dir("gloo-pair-error");
  const std::string store_dir = dir.path().string();
  // Rank 1 stays connected and never posts the receive: rank 0's wait times out on a live peer.
  pid_t child = fork_rank1(
      store_dir, [](gloo::Context&) { std::this_thread::sleep_for(std::chrono::seconds(5)); });
  ASSERT_GE(child, 0);
  auto context = connect_rank(0, store_dir);
  std::vector<char> out(1024, 'x');
  auto buffer = context->createUnboundBuffer(out.data(), out.size());
  buffer->send(1, /*slot=*/1);
  std::string raised;
  try {
    buffer->waitSend(std::chrono::milliseconds(500));
  } catch (const gloo::Exception& e) {
    raised = e.what();
  }
  EXPECT_EQ(gloo_error_kind(raised), "peer_timeout") << raised;
  EXPECT_EQ(recorded_pair_error(*context, 0), "");
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace fabkit::fabric
