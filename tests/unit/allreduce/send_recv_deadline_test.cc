// The send/receive engine's timeout is one absolute deadline per call: a peer that trickles a byte
// at a time (progress, so an inactivity timeout re-armed on every poll never fires) is cut off at
// that deadline like a silent one.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "fabric/allreduce/allreduce_types.h"
#include "fabric/allreduce/send_recv_engine.h"
#include "fabric/allreduce/session_socket.h"

namespace fabkit::fabric {
namespace {

using namespace std::chrono_literals;

struct SocketPair {
  Fd ours, theirs;
  SocketPair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ours.reset(sv[0]);
    theirs.reset(sv[1]);
    set_nonblocking(ours.get());
  }
};

// Sends one byte every 20 ms for at most 4 s; reads whatever we send so our sends never block.
struct Trickler {
  std::atomic<bool> stop{false};
  std::thread t;
  explicit Trickler(int fd) {
    t = std::thread([this, fd] {
      auto end = std::chrono::steady_clock::now() + 4s;
      char sink[4096];
      while (!stop && std::chrono::steady_clock::now() < end) {
        char b = 0;
        if (::send(fd, &b, 1, MSG_NOSIGNAL) != 1) break;
        while (::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
        }
        std::this_thread::sleep_for(20ms);
      }
    });
  }
  ~Trickler() {
    stop = true;
    t.join();
  }
};

void expect_cut_off_at_the_deadline(bool reduce) {
  SocketPair sp;
  std::vector<float> in(1024, 1.0f), out(1024, 0.0f);
  alignas(4096) static char bounce[1 << 16];
  SendRecvConfig cfg;
  cfg.send_fd = cfg.recv_fd = sp.ours.get();
  cfg.chunk_bytes = sizeof bounce;
  cfg.timeout_ms = 500;
  cfg.context = "trickle test";
  std::vector<SendOp> sends{
      {reinterpret_cast<const char*>(in.data()), in.size() * sizeof(float), -1}};
  std::vector<RecvOp> recvs{{reinterpret_cast<char*>(out.data()), out.size() * sizeof(float),
                             reduce ? in.data() : nullptr}};
  Trickler trickler(sp.theirs.get());
  auto t0 = std::chrono::steady_clock::now();
  try {
    run_send_recv(cfg, sends, recvs, bounce);
    ADD_FAILURE() << "a 4 KiB receive completed from a peer sending 50 B/s";
  } catch (const PeerError& e) {
    EXPECT_EQ(e.kind(), "peer_timeout") << e.what();
    EXPECT_NE(std::string(e.what()).find("trickle test"), std::string::npos) << e.what();
  }
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  EXPECT_GE(ms, 450);
  EXPECT_LT(ms, 1500);  // the trickle goes on for 4 s
}

TEST(PipelineDeadline, ATricklingPeerIsCutOffAtTheCallsDeadline) {
  expect_cut_off_at_the_deadline(false);
}

TEST(PipelineDeadline, ATricklingPeerIsCutOffWhileReducing) {
  expect_cut_off_at_the_deadline(true);
}

}  // namespace
}  // namespace fabkit::fabric
