// The measurement loops. write_bw: the client keeps tx_depth RDMA WRITEs in flight and times
// `iters` of them, then SENDs the elapsed time so the server can report the same figure and check
// the data (RC delivers the WRITEs before the SEND that follows them). send_lat: ping-pong of
// SENDs; one-way latency is half the round trip, as ib_send_lat reports it.
//
// RDMA WRITEs complete on the server without a trace, so the client also SENDs a small unsignaled
// progress mark after every kWritesPerMark writes. The server's wait is then bounded per mark
// (timeout_ms without one = the writes stalled), not by a guessed link rate: on soft-RoCE under
// qemu (~0.2 Gbit/s) a total budget that assumed 1 Gbit/s ended the server's wait while the client
// was still writing, and the client then stalled on a QP that was gone.
//
// Both sides also keep to the test's budget (RcTestSpec::budget_ms), the same for both and a little
// under the controller's own wait for their answers: a QP whose completions trickle in, each within
// timeout_ms, would otherwise outlast the controller, which then gives up on the whole session.
// At the budget the run ends named (rdma.rc.too_slow), with what arrived.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <limits>

#include "fabric/rdma/rc_endpoint.h"

namespace fabkit::fabric::rdma {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kDoneWrId = ~0ull;
constexpr uint64_t kMarkWrId = ~1ull;
constexpr int kWritesPerMark = 16;
// The done message carries the client's elapsed nanoseconds; a progress mark is shorter, so the
// server tells them apart by the received length.
constexpr uint32_t kDoneBytes = sizeof(uint64_t);
constexpr uint32_t kMarkBytes = 4;

// Marks that can be in flight at once (one per kWritesPerMark of tx_depth writes, plus the done
// message): the server keeps that many receives posted, the client that much more send queue.
int marks_in_flight(int tx_depth) { return tx_depth / kWritesPerMark + 2; }

uint8_t pattern_byte(size_t offset) { return static_cast<uint8_t>((offset * 131 + 7) & 0xff); }

// Completions seen so far and how many the whole test expects, for the messages of a wait that
// ends early ("12 of 5011 send completions"), and the test's deadline (RcTestSpec::budget_ms).
struct Progress {
  uint64_t sends = 0;
  uint64_t writes_done = 0;  // RDMA writes known complete: the last signaled one's wr_id + 1
  uint64_t recvs = 0;
  uint64_t sends_total = 0;
  uint64_t recvs_total = 0;
  Clock::time_point deadline;
  int budget_ms = 0;
  Clock::time_point started;
};

std::string counts(const Progress& p) {
  std::string s;
  if (p.sends_total > 0)
    s += std::to_string(p.sends) + " of " + std::to_string(p.sends_total) + " send completions";
  if (p.recvs_total > 0)
    s += (s.empty() ? "" : " and ") + std::to_string(p.recvs) + " of " +
         std::to_string(p.recvs_total) + " receive completions";
  return s;
}

bool completion_failed(const verbs::WorkCompletion& wc, RcEndpoint& ep, RcTestResult& r) {
  std::string what = std::string(wc.is_recv ? "receive" : "send/write") + " completed with " +
                     wc_status_name(wc.status);
  r.reason = what;
  if (wc.status == 12)  // RETRY_EXC_ERR: no acknowledgement from the peer
    r.diagnoses.push_back(fail("rdma.rc.retry_exceeded", ep.local.device,
                               what + ": the peer never acknowledged; packets do not reach its QP",
                               "check that both sides use reachable addresses (LID on InfiniBand, a "
                               "RoCE v2 GID on the same IP network), the same path MTU, and that "
                               "the peer process is running"));
  else
    r.diagnoses.push_back(fail("rdma.rc.completion_error", ep.local.device, what,
                               "compare keys, addresses and sizes exchanged with the peer; 'dmesg' "
                               "shows the HCA's view"));
  return false;
}

// A wait that ended without the completions it needed: stalled (nothing within timeout_ms), or
// still moving when the test's budget ran out.
bool wait_ended(RcEndpoint& ep, const Progress& p, int waited_ms, bool budget_out, RcTestResult& r) {
  const double elapsed_s =
      std::chrono::duration<double>(Clock::now() - p.started).count();
  if (budget_out) {
    r.reason = "the test's budget of " + std::to_string(p.budget_ms) + " ms ran out with " +
               counts(p) + " arrived";
    r.diagnoses.push_back(warn(
        "rdma.rc.too_slow", ep.local.device,
        r.reason + " (" + std::to_string(static_cast<int>(elapsed_s)) +
            " s): the QP moves data, too slowly to finish",
        "for a slow link (soft-RoCE under emulation) ask for less: fabcheck pair --rc-iters, "
        "--rc-size, --rc-lat-iters, or a larger --timeout-ms; on real hardware a link this slow is "
        "faulty: check the port's rate and error counters (`ibstat`, "
        "/sys/class/infiniband/DEV/ports/N/counters)"));
    return false;
  }
  r.reason = "no completion for " + std::to_string(waited_ms) + " ms: " + counts(p) +
             " had arrived";
  r.diagnoses.push_back(fail(
      "rdma.rc.no_progress", ep.local.device,
      r.reason + "; the QP is connected but moves no data",
      "check the path between the two ports: the GIDs must route to each other over the ports' "
      "own net devices (`rdma link`, `ip route get PEER`), RoCE v2's UDP port 4791 must not be "
      "dropped, and both ports must be ACTIVE; `ib_write_bw` between the hosts shows the same"));
  return false;
}

// Polls until at least `sends` send-side and `recvs` receive completions have arrived in total,
// within wait_ms (timeout_ms: each completion of a QP that moves data comes far sooner) and the
// test's deadline.
bool wait_for(RcEndpoint& ep, Progress& p, uint64_t sends, uint64_t recvs, int wait_ms,
              const RcTestSpec& s, RcTestResult& r) {
  const auto wait_deadline =
      std::min(p.deadline, Clock::now() + std::chrono::milliseconds(wait_ms));
  auto next_peer_check = Clock::now() + std::chrono::milliseconds(kPeerCheckMs);
  const auto t0 = Clock::now();
  while (p.sends < sends || p.recvs < recvs) {
    const auto now = Clock::now();
    if (s.peer_stopped && now >= next_peer_check) {
      next_peer_check = now + std::chrono::milliseconds(kPeerCheckMs);
      std::string why = s.peer_stopped();
      if (!why.empty()) {
        r.reason = "the peer stopped the test (" + why + ") with " + counts(p) + " arrived here";
        return false;
      }
    }
    const auto until = s.peer_stopped ? std::min(wait_deadline, next_peer_check) : wait_deadline;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
    auto wcs = ep.api->poll_cq(ep.cq.get(), 32, static_cast<int>(std::max<int64_t>(left, 0)));
    if (!ok(wcs)) {
      r.reason = error(wcs).to_string();
      return false;
    }
    for (const auto& wc : value(wcs)) {
      if (wc.status != 0) return completion_failed(wc, ep, r);
      ++(wc.is_recv ? p.recvs : p.sends);
      // A send queue completes in order: a signaled write's completion covers every write before.
      if (!wc.is_recv && wc.wr_id < kMarkWrId) p.writes_done = std::max(p.writes_done, wc.wr_id + 1);
    }
    if (value(wcs).empty() && Clock::now() >= wait_deadline) {
      const int waited_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
      // Ended by the test's budget when that came first, else by this wait's own bound.
      return wait_ended(ep, p, waited_ms, wait_deadline == p.deadline, r);
    }
  }
  return true;
}

bool post(RcEndpoint& ep, verbs::WrOpcode op, uint64_t wr_id, size_t offset, uint32_t len,
          uint64_t remote_addr, RcTestResult& r, bool signaled = true) {
  verbs::SendWr w{wr_id, op, ep.addr(offset), len, ep.mr_keys.lkey, signaled, remote_addr, ep.remote.rkey};
  auto p = ep.api->post_send(ep.qp.get(), w);
  if (!ok(p)) r.reason = error(p).to_string();
  return ok(p);
}

bool post_recv(RcEndpoint& ep, size_t offset, uint32_t len, RcTestResult& r) {
  auto p = ep.api->post_recv(ep.qp.get(), {0, ep.addr(offset), len, ep.mr_keys.lkey});
  if (!ok(p)) r.reason = error(p).to_string();
  return ok(p);
}

double gbps(uint64_t bytes, uint64_t ns) { return ns ? bytes * 8.0 / static_cast<double>(ns) : 0.0; }

// Writes [start, start + n) signal a completion every `every`-th and the last one, as perftest
// signals only every 100th (its cq_mod), so both are timed the same way (on soft-RoCE it made no
// measurable difference: bench/rdma/rc_bench.py gave 0.70x ib_write_bw with and without; the
// server's busy poll was that cost). `every` <= tx_depth, so a full window of writes in flight
// always holds a signaled one.
bool signaled_write(uint64_t i, uint64_t start, uint64_t n, uint64_t every) {
  return (i + 1) % every == 0 || i + 1 == start + n;
}
uint64_t signaled_writes(uint64_t start, uint64_t n, uint64_t every) {
  uint64_t count = 0;
  for (uint64_t i = start; i < start + n; ++i) count += signaled_write(i, start, n, every) ? 1 : 0;
  return count;
}

bool write_bw_client(RcEndpoint& ep, const RcTestSpec& s, Progress p, RcTestResult& r) {
  for (size_t i = 0; i < s.size_bytes; ++i) ep.buffer[i] = pattern_byte(i);
  const uint64_t warmup = static_cast<uint64_t>(s.warmup_iters), iters = static_cast<uint64_t>(s.iters);
  const uint64_t total = warmup + iters;
  const uint64_t every = std::min<uint64_t>(kWritesPerMark, static_cast<uint64_t>(s.tx_depth));
  // The signaled writes and "done" (the marks are unsignaled).
  p.sends_total = signaled_writes(0, warmup, every) + signaled_writes(warmup, iters, every) + 1;
  uint64_t posted = 0;
  auto run = [&](uint64_t n) {
    const uint64_t start = posted, target = posted + n;
    while (p.writes_done < target) {
      while (posted < target && posted - p.writes_done < static_cast<uint64_t>(s.tx_depth)) {
        const bool signal = signaled_write(posted, start, n, every);
        if (!post(ep, verbs::WrOpcode::kRdmaWrite, posted++, 0, s.size_bytes, ep.remote.addr, r,
                  signal))
          return false;
        if (posted % kWritesPerMark == 0 &&
            !post(ep, verbs::WrOpcode::kSend, kMarkWrId, s.size_bytes + kDoneBytes, kMarkBytes, 0, r,
                  false))
          return false;
      }
      if (!wait_for(ep, p, p.sends + 1, 0, s.timeout_ms, s, r)) {
        r.reason += " (" + std::to_string(p.writes_done) + " of " + std::to_string(total) +
                    " RDMA writes completed)";
        return false;
      }
    }
    return true;
  };
  if (!run(warmup)) return false;
  auto t0 = Clock::now();
  if (!run(iters)) return false;
  uint64_t ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
  std::memcpy(ep.buffer.data() + s.size_bytes, &ns, sizeof ns);
  if (!post(ep, verbs::WrOpcode::kSend, kDoneWrId, s.size_bytes, kDoneBytes, 0, r)) return false;
  if (!wait_for(ep, p, p.sends + 1, 0, s.timeout_ms, s, r)) return false;
  r.bw_gbps = gbps(r.bytes, ns);
  return true;
}

bool write_bw_server(RcEndpoint& ep, const RcTestSpec& s, Progress p, RcTestResult& r) {
  const uint64_t total = static_cast<uint64_t>(s.warmup_iters) + static_cast<uint64_t>(s.iters);
  const uint64_t marks_expected = total / kWritesPerMark;
  uint64_t marks = 0;
  bool done = false;
  auto next_peer_check = Clock::now() + std::chrono::milliseconds(kPeerCheckMs);
  while (!done) {
    // Each wait is for the next mark or the done message: timeout_ms of silence means the writes
    // stopped moving, wherever in the run that happens; the test's budget bounds the whole. The
    // client diagnoses the link (it sees every completion): here only the reason.
    const auto deadline = std::min(p.deadline, Clock::now() + std::chrono::milliseconds(s.timeout_ms));
    bool got = false;
    while (!got) {
      const auto now = Clock::now();
      if (s.peer_stopped && now >= next_peer_check) {
        next_peer_check = now + std::chrono::milliseconds(kPeerCheckMs);
        const std::string why = s.peer_stopped();
        if (!why.empty()) {
          r.reason = "the peer stopped the test (" + why + ") with " + std::to_string(marks) +
                     " of " + std::to_string(marks_expected) + " progress marks arrived here";
          return false;
        }
      }
      // One look at the CQ, then a millisecond's sleep when it is empty: the server's time is not
      // measured, and a busy poll here takes the CPU its own HCA needs where that is a CPU
      // (soft-RoCE's responder runs in ksoftirqd: busy-polling held the write bandwidth at 0.7x
      // ib_write_bw's, whose server sleeps in a socket read).
      auto wcs = ep.api->poll_cq(ep.cq.get(), 32, 0);
      if (!ok(wcs)) {
        r.reason = error(wcs).to_string();
        return false;
      }
      if (value(wcs).empty() && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      for (const auto& wc : value(wcs)) {
        if (wc.status != 0) return completion_failed(wc, ep, r);
        if (!wc.is_recv) continue;
        got = true;
        if (wc.byte_len == kDoneBytes) {
          done = true;
        } else {
          ++marks;
          if (!post_recv(ep, s.size_bytes, kControlBytes, r)) return false;
        }
      }
      if (!got && Clock::now() >= deadline) {
        const std::string seen = std::to_string(marks) + " of " + std::to_string(marks_expected) +
                                 " progress marks (one per " + std::to_string(kWritesPerMark) +
                                 " RDMA writes)";
        r.reason = deadline == p.deadline
                       ? "the test's budget of " + std::to_string(p.budget_ms) + " ms ran out with " +
                             seen + " arrived"
                       : "no progress for " + std::to_string(s.timeout_ms) + " ms: " + seen +
                             " had arrived, then nothing";
        return false;
      }
    }
  }
  uint64_t ns = 0;
  std::memcpy(&ns, ep.buffer.data() + s.size_bytes, sizeof ns);
  bool same = true;
  for (size_t i = 0; i < s.size_bytes && same; ++i) same = ep.buffer[i] == pattern_byte(i);
  r.data_verified = same;
  r.bw_gbps = gbps(r.bytes, ns);
  if (!same) r.reason = "the written buffer does not hold the client's pattern";
  return same;
}

bool send_lat(RcEndpoint& ep, const RcTestSpec& s, Progress p, RcTestResult& r) {
  const size_t send_off = 0, recv_off = s.size_bytes;
  std::vector<double> half_rtt_us;
  p.sends_total = p.recvs_total = static_cast<uint64_t>(s.warmup_iters + s.iters);
  bool client = s.role == RcRole::kClient;
  for (int i = 0; i < s.warmup_iters + s.iters; ++i) {
    auto t0 = Clock::now();
    if (client && !post(ep, verbs::WrOpcode::kSend, i, send_off, s.size_bytes, 0, r)) return false;
    // Targets by iteration, not "one more than seen": one poll may return the send completion
    // together with the peer's next message.
    uint64_t n = static_cast<uint64_t>(i) + 1;
    if (!wait_for(ep, p, 0, n, s.timeout_ms, s, r)) return false;
    if (!post_recv(ep, recv_off, s.size_bytes, r)) return false;
    if (!client && !post(ep, verbs::WrOpcode::kSend, i, send_off, s.size_bytes, 0, r)) return false;
    if (!wait_for(ep, p, n, 0, s.timeout_ms, s, r)) return false;
    if (client && i >= s.warmup_iters)
      half_rtt_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
  }
  if (client) {
    r.lat_us_median = percentile(half_rtt_us, 50);
    r.lat_us_p99 = percentile(half_rtt_us, 99);
    r.lat_histogram.emplace();
    for (double us : half_rtt_us) r.lat_histogram->add(us);
  }
  return true;
}

}  // namespace

int rc_default_budget_ms(RcMode mode, uint32_t size_bytes, int iters, int timeout_ms) {
  const uint64_t n = static_cast<uint64_t>(std::max(iters, 0)) + 10;  // and the warm-up
  const uint64_t transfer_ms = mode == RcMode::kSendLat ? n * 50
                                                        : uint64_t{size_bytes} * n * 8 / 100000;
  return static_cast<int>(
      std::min<uint64_t>(4 * static_cast<uint64_t>(std::max(timeout_ms, 0)) + transfer_ms, 3600000));
}

RcTestResult run_rc_test(verbs::VerbsApi& api, const RcTestSpec& s, const RcExchange& exchange) {
  RcTestResult r;
  if (s.size_bytes == 0 || s.iters <= 0 || s.warmup_iters < 0 || s.tx_depth <= 0 || s.timeout_ms <= 0) {
    r.reason = "invalid spec: size_bytes, iters, tx_depth and timeout_ms must be positive";
    return r;
  }
  bool lat = s.mode == RcMode::kSendLat;
  Progress progress;
  progress.started = Clock::now();
  progress.budget_ms =
      s.budget_ms > 0 ? s.budget_ms : rc_default_budget_ms(s.mode, s.size_bytes, s.iters, s.timeout_ms);
  progress.deadline = progress.started + std::chrono::milliseconds(progress.budget_ms);
  RcEndpoint ep;
  ep.api = &api;
  size_t bytes = (lat ? 2 * size_t{s.size_bytes} : size_t{s.size_bytes}) + kControlBytes;
  if (!setup_endpoint(ep, s, bytes, lat ? 2 : s.tx_depth + marks_in_flight(s.tx_depth), r)) return r;
  // Receives go up before the peer can send (rc_pingpong does the same).
  if (lat && !post_recv(ep, s.size_bytes, s.size_bytes, r)) return r;
  if (!lat && s.role == RcRole::kServer)
    for (int i = 0; i < marks_in_flight(s.tx_depth); ++i)
      if (!post_recv(ep, s.size_bytes, kControlBytes, r)) return r;

  auto remote = exchange(ep.local);
  if (!ok(remote)) {
    r.reason = "endpoint exchange: " + error(remote).to_string();
    return r;
  }
  ep.remote = value(remote);
  auto diag = diagnose_rc_pair(ep.local, ep.remote);
  r.diagnoses.insert(r.diagnoses.end(), diag.begin(), diag.end());
  for (const auto& f : diag)
    if (f.severity == Severity::kFail) {
      r.reason = "not connecting: " + f.message;
      return r;
    }
  r.path_mtu = std::min(ep.local.mtu, ep.remote.mtu);
  if (!connect_endpoint(ep, r.path_mtu, r)) return r;
  // Barrier: a SEND or WRITE that reaches a QP not yet in RTR is dropped and retried until
  // retry_cnt runs out; perftest and rc_pingpong also handshake again after connecting.
  auto ready = exchange(ep.local);
  if (!ok(ready)) {
    r.reason = "ready barrier: " + error(ready).to_string();
    return r;
  }

  r.iters = s.iters;
  r.bytes = uint64_t{s.size_bytes} * static_cast<uint64_t>(s.iters);
  bool done = lat ? send_lat(ep, s, progress, r)
                  : (s.role == RcRole::kClient ? write_bw_client(ep, s, progress, r)
                                               : write_bw_server(ep, s, progress, r));
  if (done) r.status = "ok";
  return r;
}

}  // namespace fabkit::fabric::rdma
