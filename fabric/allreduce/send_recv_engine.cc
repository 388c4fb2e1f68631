#include "fabric/allreduce/send_recv_engine.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fabric/allreduce/allreduce_types.h"
#include "fabric/wire/socket_io.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::fabric {
namespace {

// Per send() call: large enough to amortise the syscall, small enough that we come back to drain
// the receive side before the peer's sender stalls on a full window.
constexpr size_t kMaxSendCall = 1 << 20;

std::string err_text(int err) {
  return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
}

}  // namespace

// -O2 in GCC 12 vectorises only loops with no scalar epilogue ("very cheap" cost model), which
// leaves this one scalar; the reduction runs on the critical path of every all-reduce, so ask for
// full vectorisation here, with an AVX2 clone picked at load time on CPUs that have it.
__attribute__((optimize("O3"), target_clones("avx2", "default"))) void add_floats(
    float* __restrict dst, const float* __restrict a, const float* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}

void run_send_recv(const SendRecvConfig& cfg, const std::vector<SendOp>& sends,
                   const std::vector<RecvOp>& recvs, char* bounce) {
  // One absolute deadline for the whole call, fixed before the first byte: a peer trickling a
  // byte at a time makes "progress" and would never trip an inactivity timeout.
  const wire::Deadline deadline = wire::deadline_in_ms(cfg.timeout_ms);
  std::vector<size_t> done(recvs.size(), 0);  // processed bytes per recv op
  size_t si = 0, soff = 0, ri = 0, fill = 0;  // fill: bytes in bounce not yet reduced (< 4)
  uint64_t sent_total = 0, recv_total = 0, send_goal = 0, recv_goal = 0;
  for (const auto& s : sends) send_goal += s.len;
  for (const auto& r : recvs) recv_goal += r.len;
  auto skip_empty = [&] {
    while (si < sends.size() && soff == sends[si].len) ++si, soff = 0;
    while (ri < recvs.size() && done[ri] == recvs[ri].len) ++ri, fill = 0;
  };
  auto progress_text = [&] {
    return " (" + cfg.context + "; sent " + std::to_string(sent_total) + "/" +
           std::to_string(send_goal) + " B, received " + std::to_string(recv_total) + "/" +
           std::to_string(recv_goal) + " B)";
  };
  auto timed_out = [&] {
    return PeerError("peer_timeout",
                     "the call did not finish within " + std::to_string(cfg.timeout_ms) +
                         " ms: the peer stopped, or trickles, sending or receiving" +
                         progress_text());
  };
  auto closed = [&](const char* how) {
    return PeerError("peer_closed", std::string("peer ") + how + progress_text() +
                                        ": the peer process died or gave up");
  };
  skip_empty();
  while (si < sends.size() || ri < recvs.size()) {
    bool progressed = false;
    size_t avail = 0;
    if (si < sends.size()) {
      const SendOp& s = sends[si];
      avail = s.dep < 0 ? s.len : std::min(s.len, done[static_cast<size_t>(s.dep)]);
    }
    if (si < sends.size() && soff < avail) {
      size_t want = std::min(avail - soff, kMaxSendCall);
      ssize_t n = ::send(cfg.send_fd, sends[si].src + soff, want, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        soff += static_cast<size_t>(n);
        sent_total += static_cast<uint64_t>(n);
        progressed = true;
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        int err = errno;
        if (err == EPIPE || err == ECONNRESET) throw closed("reset the connection");
        throw PeerError("io_error", "send: " + err_text(err) + progress_text());
      }
    }
    if (ri < recvs.size()) {
      const RecvOp& r = recvs[ri];
      char* target;
      size_t want;
      if (r.addend == nullptr) {
        target = r.dst + done[ri];
        want = r.len - done[ri];
      } else {
        // Bytes of this op not yet in the bounce buffer, capped by its free space.
        target = bounce + fill;
        want = std::min(cfg.chunk_bytes - fill, r.len - done[ri] - fill);
      }
      ssize_t n = ::recv(cfg.recv_fd, target, want, MSG_DONTWAIT);
      if (n > 0) {
        recv_total += static_cast<uint64_t>(n);
        progressed = true;
        if (r.addend == nullptr) {
          done[ri] += static_cast<size_t>(n);
        } else {
          // Reduce every whole float that arrived, right away: the kernel's copy just put these
          // bytes in this core's cache, so the add reads them from there, and the reduced bytes
          // become sendable (done) without waiting for a full chunk. A split float (TCP does not
          // respect element boundaries) moves to the front, so the buffer restarts at 0 each time.
          fill += static_cast<size_t>(n);
          size_t whole = fill / sizeof(float) * sizeof(float);
          size_t off = done[ri];
          add_floats(reinterpret_cast<float*>(r.dst + off), r.addend + off / sizeof(float),
                     reinterpret_cast<const float*>(bounce), whole / sizeof(float));
          done[ri] += whole;
          fill -= whole;
          if (fill > 0) std::memmove(bounce, bounce + whole, fill);
        }
      } else if (n == 0) {
        throw closed("closed the connection");
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        int err = errno;
        if (err == ECONNRESET) throw closed("reset the connection");
        throw PeerError("io_error", "recv: " + err_text(err) + progress_text());
      }
    }
    skip_empty();
    if (si >= sends.size() && ri >= recvs.size()) break;
    // Checked on progress too: a socket that always has one byte ready never lets poll time out.
    if (wire::Clock::now() >= deadline) throw timed_out();
    if (progressed) continue;
    // Nothing moved: sleep in poll until the socket can take or give bytes or the deadline passes.
    bool want_out = si < sends.size() &&
                    soff < (sends[si].dep < 0 ? sends[si].len
                                              : std::min(sends[si].len,
                                                         done[static_cast<size_t>(sends[si].dep)]));
    bool want_in = ri < recvs.size();
    pollfd pfds[2];
    nfds_t nfds = 0;
    if (cfg.send_fd == cfg.recv_fd) {
      pfds[nfds++] = pollfd{
          cfg.send_fd, static_cast<short>((want_out ? POLLOUT : 0) | (want_in ? POLLIN : 0)), 0};
    } else {
      if (want_out) pfds[nfds++] = pollfd{cfg.send_fd, POLLOUT, 0};
      if (want_in) pfds[nfds++] = pollfd{cfg.recv_fd, POLLIN, 0};
    }
    if (nfds == 0)
      throw PeerError(
          "io_error",
          "send/receive engine stalled: a send waits on data never received" + progress_text());
    int rc;
    try {
      rc = wire::poll_until(pfds, nfds, deadline, "the all-reduce sockets");
    } catch (const wire::WireError& e) {
      throw PeerError("io_error", std::string(e.what()) + progress_text());
    }
    if (rc == 0) throw timed_out();
  }
}

}  // namespace fabkit::fabric
