// What a rank checks before it runs a list: the rendezvous replay, the per-rank order rules, the
// activation high-water mark, the theoretical bubble and the transfer tags.
#include <algorithm>
#include <cstdint>
#include <map>
#include <sstream>

#include "common/errors.h"
#include "trainer/parallel/pipeline_schedule.h"

namespace fabkit::trainer {
namespace {

std::string at_rank(int r, const PipeAction& a) {
  return "rank " + std::to_string(r) + " " + to_string(a);
}

// The per-rank rules of validate_pipe_schedules, on one list.
std::string check_rank_order(const std::vector<PipeAction>& list, int r, const PipeShape& s) {
  const int p = s.ranks, last_stage = s.virtual_stages() - 1;
  // Per (micro-batch, chunk): what has happened so far on this rank.
  struct State {
    bool recv_act = false, forward = false, send_act = false;
    bool recv_grad = false, input_grad = false, weight_grad = false, send_grad = false;
  };
  std::map<std::pair<int, int>, State> st;
  for (const PipeAction& a : list) {
    if (a.micro_batch < 0 || a.micro_batch >= s.micro_batches || a.chunk < 0 ||
        a.chunk >= s.chunks) {
      return at_rank(r, a) + " is outside the shape (M=" + std::to_string(s.micro_batches) +
             ", V=" + std::to_string(s.chunks) + ")";
    }
    const int g = a.chunk * p + r;
    State& x = st[{a.micro_batch, a.chunk}];
    if (!is_compute(a.op) && pipe_peer(s, r, a).rank < 0) {
      return at_rank(r, a) + " has no peer: virtual stage " + std::to_string(g) +
             (a.op == PipeOp::kRecvActivation || a.op == PipeOp::kSendGrad ? " is the first"
                                                                           : " is the last");
    }
    auto twice = [&](bool& done) -> std::string {
      if (done) return at_rank(r, a) + " appears twice";
      done = true;
      return "";
    };
    std::string err;
    switch (a.op) {
      case PipeOp::kRecvActivation:
        if (x.forward) return at_rank(r, a) + " comes after the forward that uses it";
        err = twice(x.recv_act);
        break;
      case PipeOp::kForward:
        if (g > 0 && !x.recv_act) return at_rank(r, a) + " has no recv_act before it";
        err = twice(x.forward);
        break;
      case PipeOp::kSendActivation:
        if (!x.forward) return at_rank(r, a) + " comes before its forward";
        err = twice(x.send_act);
        break;
      case PipeOp::kRecvGrad:
        if (x.input_grad) return at_rank(r, a) + " comes after the backward that uses it";
        err = twice(x.recv_grad);
        break;
      case PipeOp::kBackward:
      case PipeOp::kBackwardInput:
        if (!x.forward) return at_rank(r, a) + " comes before its forward";
        if (g < last_stage && !x.recv_grad) return at_rank(r, a) + " has no recv_grad before it";
        if (x.input_grad) return at_rank(r, a) + " backpropagates a second time";
        x.input_grad = true;
        if (a.op == PipeOp::kBackward) x.weight_grad = true;
        break;
      case PipeOp::kBackwardWeight:
        if (!x.input_grad) return at_rank(r, a) + " comes before its backward_input";
        err = twice(x.weight_grad);
        break;
      case PipeOp::kSendGrad:
        if (!x.input_grad) return at_rank(r, a) + " comes before its backward";
        err = twice(x.send_grad);
        break;
    }
    if (!err.empty()) return err;
  }
  for (int c = 0; c < s.chunks; ++c) {
    const int g = c * p + r;
    for (int mb = 0; mb < s.micro_batches; ++mb) {
      const State& x = st[{mb, c}];
      const std::string which = "rank " + std::to_string(r) + " micro-batch " + std::to_string(mb) +
                                " chunk " + std::to_string(c) + " ";
      if (!x.forward) return which + "is never forwarded";
      if (!x.input_grad) return which + "is never backpropagated";
      if (!x.weight_grad) return which + "has no backward_weight";
      if (g < last_stage && !x.send_act) return which + "never sends its activation";
      if (g > 0 && !x.send_grad) return which + "never sends its input gradient";
    }
  }
  return "";
}

}  // namespace

std::string simulate_rendezvous(const std::vector<std::vector<PipeAction>>& per_rank,
                                const PipeShape& s) {
  const int n = static_cast<int>(per_rank.size());
  std::vector<size_t> pc(static_cast<size_t>(n), 0);
  auto at_end = [&](int r) { return pc[r] >= per_rank[r].size(); };
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < n; ++r) {
      while (!at_end(r) && is_compute(per_rank[r][pc[r]].op)) {
        ++pc[r];
        progress = true;
      }
      if (at_end(r)) continue;
      const PipeAction& a = per_rank[r][pc[r]];
      const PipePeer pa = pipe_peer(s, r, a);
      if (pa.rank < 0 || pa.rank >= n) return at_rank(r, a) + " has no peer rank";
      if (at_end(pa.rank)) continue;
      const PipeAction& b = per_rank[pa.rank][pc[pa.rank]];
      if (is_compute(b.op) || b.op != pipe_matching_op(a.op)) continue;
      const PipePeer pb = pipe_peer(s, pa.rank, b);
      // The same transfer seen from both ends: the same boundary between virtual stages (with
      // P = 2 both neighbours of a chunk are on the other rank), the same direction.
      if (pb.rank != r || pb.boundary != pa.boundary) continue;
      if (b.micro_batch != a.micro_batch) {
        return at_rank(r, a) + " met " + at_rank(pa.rank, b) + " (tags differ: both would wait)";
      }
      ++pc[r];
      ++pc[pa.rank];
      progress = true;
    }
  }
  std::ostringstream blocked;
  for (int r = 0; r < n; ++r) {
    if (at_end(r)) continue;
    blocked << (blocked.tellp() > 0 ? "; " : "") << "rank " << r << " waits at "
            << to_string(per_rank[r][pc[r]]);
  }
  return blocked.str();
}

std::string simulate_rendezvous(const std::vector<std::vector<PipeAction>>& per_stage) {
  const int p = static_cast<int>(per_stage.size());
  int m = 1;
  for (const auto& l : per_stage) {
    for (const auto& a : l) m = std::max(m, a.micro_batch + 1);
  }
  return simulate_rendezvous(per_stage, PipeShape{std::max(p, 1), m, 1});
}

std::string validate_pipe_schedules(const std::vector<std::vector<PipeAction>>& per_rank,
                                    const PipeShape& s) {
  if (static_cast<int>(per_rank.size()) != s.ranks) {
    return std::to_string(per_rank.size()) + " lists for " + std::to_string(s.ranks) + " ranks";
  }
  for (int r = 0; r < s.ranks; ++r) {
    std::string err = check_rank_order(per_rank[r], r, s);
    if (!err.empty()) return err;
  }
  std::string blocked = simulate_rendezvous(per_rank, s);
  return blocked.empty() ? "" : "deadlock: " + blocked;
}

int peak_in_flight(const std::vector<PipeAction>& actions) {
  int live = 0, peak = 0;
  for (const auto& a : actions) {
    if (a.op == PipeOp::kForward) peak = std::max(peak, ++live);
    // A B pass frees most of the forward's activations, but W still needs the layers' inputs
    // and output gradients, so the micro-batch counts until its W (Qi et al., Table 1).
    if (a.op == PipeOp::kBackward || a.op == PipeOp::kBackwardWeight) --live;
  }
  return peak;
}

double bubble_fraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

double bubble_fraction(PipeSchedule kind, const PipeShape& s) {
  const double p1 = s.ranks - 1, m = s.micro_batches, v = s.chunks;
  switch (kind) {
    case PipeSchedule::kGPipe:
    case PipeSchedule::k1F1B:
      return p1 / (m + p1);
    case PipeSchedule::kInterleaved1F1B:
      // Each chunk costs 1/V of a stage, so the warm-up and drain shrink V-fold (Narayanan et al.).
      return p1 / (v * m + p1);
    case PipeSchedule::kZBH1:
      // Qi et al. section 2.1: a rank idles (P-1)(F + B - W) against 1F1B's (P-1)(F + B + W)
      // (their efficiency.py asserts it of the handcrafted schedule), because B waits only on
      // the next rank's B and the deferred W passes fill the drain. With F = B = W that is P-1
      // units of a 3M-unit step: (P-1)/(3M+P-1), a third of 1F1B's idle time. It needs M >= P
      // (enough W passes to defer); below that the timeline shows more.
      return p1 / (3 * m + p1);
  }
  return 0;
}

int pipe_tag(const PipeShape& s, PipeOp op, int micro_batch, int boundary) {
  FABKIT_ENFORCE(!is_compute(op), "computations have no tag");
  const bool grad = op == PipeOp::kSendGrad || op == PipeOp::kRecvGrad;
  return 2 * (micro_batch * s.virtual_stages() + boundary) + (grad ? 1 : 0);
}

bool pipe_tags_fit(const PipeShape& s) {
  // Boundaries run 0..PV-2; the collectives' exchanges own [2^30, 2^30 + 2^20) (comm.h).
  const int64_t g = static_cast<int64_t>(s.ranks) * s.chunks;
  if (g < 2) return true;
  const int64_t largest = 2 * ((static_cast<int64_t>(s.micro_batches) - 1) * g + (g - 2)) + 1;
  return largest < (int64_t{1} << 30);
}

}  // namespace fabkit::trainer
