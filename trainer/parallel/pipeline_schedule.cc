// Generating the lists: each rank's order of computations (the schedule proper), then the
// transfers around them, ordered by playing all ranks together. Validation, memory and tags are
// in pipeline_schedule_check.cc; timelines in pipeline_timeline.cc.
#include <algorithm>
#include <optional>

#include "common/errors.h"
#include "trainer/parallel/pipeline_schedule.h"

namespace fabkit::trainer {
namespace {

PipeAction act(PipeOp op, int mb, int chunk = 0) { return PipeAction{op, mb, chunk}; }

// GPipe: all forwards, then the backwards in reverse order: the last micro-batch's activations
// are the freshest and the first the last rank can start on, so no rank waits on a gradient it
// cannot get yet.
std::vector<PipeAction> gpipe_order(int m) {
  std::vector<PipeAction> out;
  for (int i = 0; i < m; ++i) out.push_back(act(PipeOp::kForward, i));
  for (int i = m; i-- > 0;) out.push_back(act(PipeOp::kBackward, i));
  return out;
}

// 1F1B (PipeDream-flush): P-1-r warm-up forwards, so that the first gradient arrives just as
// rank r's pipeline is full; then one forward, one backward; then the drain.
std::vector<PipeAction> one_f_one_b_order(int rank, int p, int m) {
  std::vector<PipeAction> out;
  const int warmup = std::min(p - 1 - rank, m);
  for (int i = 0; i < warmup; ++i) out.push_back(act(PipeOp::kForward, i));
  for (int i = 0; i < m - warmup; ++i) {
    out.push_back(act(PipeOp::kForward, warmup + i));
    out.push_back(act(PipeOp::kBackward, i));
  }
  for (int i = m - warmup; i < m; ++i) out.push_back(act(PipeOp::kBackward, i));
  return out;
}

// ZB-H1 (Qi et al. 2023, section 2.1 and Figure 3 top; the authors' get_hand_schedule with
// warmup 1 x (P-1-r) in their efficiency.py): 1F1B's forwards and B passes in 1F1B's places,
// and rank r runs the W of micro-batch i - r right after the B of micro-batch i, i.e. its W
// passes are delayed by r. B depends only on the next rank's B (not its W), so the B passes
// travel back P-1 units earlier than 1F1B's whole backwards, and the r deferred W passes fill
// the tail where 1F1B idles. Every rank then holds at most P micro-batches until their W, the
// first rank's (the one that holds the most under 1F1B) figure: 1F1B's peak memory.
std::vector<PipeAction> zb_h1_order(int rank, int p, int m) {
  std::vector<PipeAction> out;
  const int warmup = std::min(p - 1 - rank, m);
  for (int i = 0; i < warmup; ++i) out.push_back(act(PipeOp::kForward, i));
  int next_w = 0;
  for (int i = 0; i < m; ++i) {
    if (warmup + i < m) out.push_back(act(PipeOp::kForward, warmup + i));
    out.push_back(act(PipeOp::kBackwardInput, i));
    if (i >= rank) out.push_back(act(PipeOp::kBackwardWeight, next_w++));
  }
  while (next_w < m) out.push_back(act(PipeOp::kBackwardWeight, next_w++));
  return out;
}

// Interleaved 1F1B, Megatron-LM's forward_backward_pipelining_with_interleaving (Narayanan et al.
// 2021, section 2.2, Figure 4 bottom), with its default micro-batch group of P: the k-th forward
// of a rank is micro-batch (k / PV) x P + k % P of chunk (k / P) % V, i.e. P micro-batches
// through chunk 0, the same P through chunk 1, ..., then the next P; the k-th backward takes
// the same micro-batch through the chunks in reverse. Warm-up: (P-1-r) x 2 + (V-1) x P forwards
// (capped at M x V), enough that rank 0's chunk 0 is still busy when the first gradient has
// come back through all P x V virtual stages; then one forward, one backward; then the drain.
std::vector<PipeAction> interleaved_order(int rank, const PipeShape& s) {
  const int p = s.ranks, v = s.chunks, total = s.micro_batches * s.chunks;
  auto mb_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  auto forward = [&](int k) { return act(PipeOp::kForward, mb_of(k), (k / p) % v); };
  auto backward = [&](int k) { return act(PipeOp::kBackward, mb_of(k), v - 1 - (k / p) % v); };
  const int warmup = std::min((p - 1 - rank) * 2 + (v - 1) * p, total);
  std::vector<PipeAction> out;
  for (int k = 0; k < warmup; ++k) out.push_back(forward(k));
  for (int k = 0; k < total - warmup; ++k) {
    out.push_back(forward(warmup + k));
    out.push_back(backward(k));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(backward(k));
  return out;
}

std::vector<PipeAction> compute_order(PipeSchedule kind, int rank, const PipeShape& s) {
  switch (kind) {
    case PipeSchedule::kGPipe:
      return gpipe_order(s.micro_batches);
    case PipeSchedule::k1F1B:
      return one_f_one_b_order(rank, s.ranks, s.micro_batches);
    case PipeSchedule::kInterleaved1F1B:
      return interleaved_order(rank, s);
    case PipeSchedule::kZBH1:
      return zb_h1_order(rank, s.ranks, s.micro_batches);
  }
  FABKIT_ENFORCE(false, "unknown pipeline schedule");
  return {};
}

// The transfer the peer must post for `a` (on `rank`) to complete: the opposite op, the same
// micro-batch, and the same boundary seen from the other side.
bool matches(const PipeShape& s, int rank, const PipeAction& a, int peer_rank,
             const PipeAction& b) {
  if (b.op != pipe_matching_op(a.op) || b.micro_batch != a.micro_batch) return false;
  const PipePeer pa = pipe_peer(s, rank, a), pb = pipe_peer(s, peer_rank, b);
  return pa.rank == peer_rank && pb.rank == rank && pa.boundary == pb.boundary &&
         pa.chunk == b.chunk && pb.chunk == a.chunk;
}

}  // namespace

PipeSchedule parse_pipe_schedule(const std::string& name) {
  if (name == "gpipe") return PipeSchedule::kGPipe;
  if (name == "1f1b") return PipeSchedule::k1F1B;
  if (name == "interleaved-1f1b") return PipeSchedule::kInterleaved1F1B;
  if (name == "zb-h1") return PipeSchedule::kZBH1;
  throw UsageError("--schedule " + name +
                   " is not a pipeline schedule: use gpipe, 1f1b, interleaved-1f1b or zb-h1");
}

std::string to_string(PipeSchedule s) {
  switch (s) {
    case PipeSchedule::kGPipe:
      return "gpipe";
    case PipeSchedule::k1F1B:
      return "1f1b";
    case PipeSchedule::kInterleaved1F1B:
      return "interleaved-1f1b";
    case PipeSchedule::kZBH1:
      return "zb-h1";
  }
  return "?";
}

std::string to_string(PipeOp op) {
  switch (op) {
    case PipeOp::kRecvActivation:
      return "recv_act";
    case PipeOp::kForward:
      return "forward";
    case PipeOp::kSendActivation:
      return "send_act";
    case PipeOp::kRecvGrad:
      return "recv_grad";
    case PipeOp::kBackward:
      return "backward";
    case PipeOp::kSendGrad:
      return "send_grad";
    case PipeOp::kBackwardInput:
      return "backward_input";
    case PipeOp::kBackwardWeight:
      return "backward_weight";
  }
  return "?";
}

std::string to_string(const PipeAction& a) {
  std::string s = to_string(a.op) + "(" + std::to_string(a.micro_batch);
  if (a.chunk != 0) s += ", chunk " + std::to_string(a.chunk);
  return s + ")";
}

bool is_compute(PipeOp op) {
  return op == PipeOp::kForward || op == PipeOp::kBackward || op == PipeOp::kBackwardInput ||
         op == PipeOp::kBackwardWeight;
}

PipeOp pipe_matching_op(PipeOp op) {
  switch (op) {
    case PipeOp::kSendActivation:
      return PipeOp::kRecvActivation;
    case PipeOp::kRecvActivation:
      return PipeOp::kSendActivation;
    case PipeOp::kSendGrad:
      return PipeOp::kRecvGrad;
    case PipeOp::kRecvGrad:
      return PipeOp::kSendGrad;
    default:
      return op;
  }
}

void check_pipe_shape(PipeSchedule kind, const PipeShape& s) {
  const std::string what = "pipeline schedule " + to_string(kind) + " with " +
                           std::to_string(s.ranks) + " ranks, " + std::to_string(s.micro_batches) +
                           " micro-batches and " + std::to_string(s.chunks) + " chunks per rank: ";
  if (s.ranks < 1 || s.micro_batches < 1 || s.chunks < 1) {
    throw UsageError(what + "ranks, micro-batches and chunks must each be at least 1");
  }
  if (kind == PipeSchedule::kInterleaved1F1B) {
    if (s.ranks < 2) throw UsageError(what + "interleaving needs --pp 2 or more");
    if (s.chunks < 2) {
      throw UsageError(what + "interleaving needs --virtual-stages 2 or more (1 is plain 1f1b)");
    }
    // Megatron's order walks micro-batches in groups of P through every chunk; a last, partial
    // group would leave some ranks without work while others wait on them.
    if (s.micro_batches % s.ranks != 0) {
      const int up = (s.micro_batches / s.ranks + 1) * s.ranks;
      throw UsageError(what + "the micro-batch count must be a multiple of --pp " +
                       std::to_string(s.ranks) + " (use --micro-batches " + std::to_string(up) +
                       (up - s.ranks >= s.ranks ? " or " + std::to_string(up - s.ranks) : "") +
                       ")");
    }
  } else if (s.chunks != 1) {
    throw UsageError(what +
                     "only interleaved-1f1b runs more than one chunk per rank "
                     "(use --virtual-stages 1)");
  }
  if (!pipe_tags_fit(s)) {
    throw UsageError(what +
                     "too many micro-batches x virtual stages for the transfer tags "
                     "(below 2^30): use fewer micro-batches");
  }
}

PipePeer pipe_peer(const PipeShape& s, int rank, const PipeAction& a) {
  FABKIT_ENFORCE(!is_compute(a.op), "a computation has no peer");
  const int p = s.ranks, g = a.chunk * p + rank;
  const bool toward_next = a.op == PipeOp::kSendActivation || a.op == PipeOp::kRecvGrad;
  PipePeer out;
  out.boundary = toward_next ? g : g - 1;
  const int other = toward_next ? g + 1 : g - 1;
  if (other < 0 || other >= s.virtual_stages()) return out;  // rank -1: no such stage
  out.rank = other % p;
  out.chunk = other / p;
  return out;
}

std::vector<std::vector<PipeAction>> make_pipe_schedules(PipeSchedule kind, const PipeShape& s) {
  check_pipe_shape(kind, s);
  const int p = s.ranks, last_stage = s.virtual_stages() - 1;
  // Per rank: segments of (the unordered transfers before a computation, the computation). The
  // sends after one computation and the receives before the next form one group, as if posted
  // together (Megatron batches them the same way: send_forward_recv_backward and friends).
  struct Segment {
    std::vector<PipeAction> comm;
    std::optional<PipeAction> compute;
  };
  std::vector<std::vector<Segment>> seg(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) {
    Segment cur;
    for (const PipeAction& c : compute_order(kind, r, s)) {
      const int g = c.chunk * p + r;
      const bool backward = c.op == PipeOp::kBackward || c.op == PipeOp::kBackwardInput;
      if (c.op == PipeOp::kForward && g > 0) {
        cur.comm.push_back(act(PipeOp::kRecvActivation, c.micro_batch, c.chunk));
      }
      if (backward && g < last_stage) {
        cur.comm.push_back(act(PipeOp::kRecvGrad, c.micro_batch, c.chunk));
      }
      cur.compute = c;
      seg[r].push_back(cur);
      cur = Segment{};
      if (c.op == PipeOp::kForward && g < last_stage) {
        cur.comm.push_back(act(PipeOp::kSendActivation, c.micro_batch, c.chunk));
      }
      // The gradient goes out after B, not after W: W is off the critical path (ZB-H1's point).
      if (backward && g > 0) cur.comm.push_back(act(PipeOp::kSendGrad, c.micro_batch, c.chunk));
    }
    seg[r].push_back(cur);  // the last sends, no computation after them
  }
  // Play all ranks together, letting a group's transfers complete in whatever order its peers
  // are ready for (as if the rank waited on all of them at once), and write each rank's list in
  // the order they completed. Replayed with blocking calls, every list then meets its peers in
  // that same global order, so none can wait forever (validate_pipe_schedules replays them under
  // rendezvous semantics). Every rank computes the same lists: the play is deterministic.
  //
  // Interleaving closes a ring (rank 0's chunk 1 sends gradients back to rank P-1's chunk 0):
  // in the steady state every rank can be waiting to hand a gradient to its predecessor, which
  // waits to hand one to its own. Megatron posts the next step's receives in the same batch as
  // the sends; here, only when no transfer can complete, the lowest rank whose group has only
  // sends left keeps them outstanding and goes on to its next computation (its list sends the
  // buffered output later, when its peer takes it). Schedules without the ring never need it,
  // so their lists keep every send right after the computation that produced it.
  std::vector<std::vector<PipeAction>> out(static_cast<size_t>(p));
  std::vector<std::vector<PipeAction>> deferred(static_cast<size_t>(p));
  std::vector<size_t> at(static_cast<size_t>(p), 0);
  auto done = [&](int r) { return at[r] == seg[r].size(); };
  // Complete one transfer of `mine` (rank r's group or deferred sends) with whatever rank q
  // offers; true when one completed.
  auto meet = [&](int r, std::vector<PipeAction>& mine) {
    for (size_t i = 0; i < mine.size(); ++i) {
      const PipeAction a = mine[i];
      const int q = pipe_peer(s, r, a).rank;
      std::vector<PipeAction>* offers[] = {done(q) ? nullptr : &seg[q][at[q]].comm, &deferred[q]};
      for (std::vector<PipeAction>* theirs : offers) {
        if (!theirs) continue;
        auto it = std::find_if(theirs->begin(), theirs->end(),
                               [&](const PipeAction& b) { return matches(s, r, a, q, b); });
        if (it == theirs->end()) continue;
        out[r].push_back(a);
        out[q].push_back(*it);
        theirs->erase(it);
        mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(i));
        return true;
      }
    }
    return false;
  };
  for (;;) {
    bool progress = false;
    for (int r = 0; r < p; ++r) {
      while (!done(r) && seg[r][at[r]].comm.empty()) {
        if (seg[r][at[r]].compute) out[r].push_back(*seg[r][at[r]].compute);
        ++at[r];
        progress = true;
      }
      if (!done(r) && meet(r, seg[r][at[r]].comm)) progress = true;
      if (meet(r, deferred[r])) progress = true;
    }
    if (progress) continue;
    int release = -1;
    for (int r = 0; r < p && release < 0; ++r) {
      if (done(r) || !seg[r][at[r]].compute) continue;  // the last sends: nothing to go on to
      const auto& comm = seg[r][at[r]].comm;
      const bool sends_only = std::none_of(comm.begin(), comm.end(), [](const PipeAction& a) {
        return a.op == PipeOp::kRecvActivation || a.op == PipeOp::kRecvGrad;
      });
      if (sends_only) release = r;
    }
    if (release < 0) break;
    auto& comm = seg[release][at[release]].comm;
    deferred[release].insert(deferred[release].end(), comm.begin(), comm.end());
    comm.clear();
  }
  std::string stuck;
  for (int r = 0; r < p; ++r) {
    if (done(r) && deferred[r].empty()) continue;
    stuck += "; rank " + std::to_string(r) + " waits on";
    if (!done(r)) {
      for (const PipeAction& a : seg[r][at[r]].comm) stuck += " " + to_string(a);
    }
    for (const PipeAction& a : deferred[r]) stuck += " " + to_string(a);
  }
  FABKIT_ENFORCE(stuck.empty(), "pipeline schedule " + to_string(kind) + " cannot complete (P=" +
                                    std::to_string(p) + ", M=" + std::to_string(s.micro_batches) +
                                    ", V=" + std::to_string(s.chunks) + ")" + stuck);
  return out;
}

std::vector<PipeAction> make_pipe_schedule(PipeSchedule kind, int rank, const PipeShape& s) {
  FABKIT_ENFORCE(rank >= 0 && rank < s.ranks, "bad pipeline rank");
  return make_pipe_schedules(kind, s)[static_cast<size_t>(rank)];
}

std::vector<std::vector<PipeAction>> make_pipe_schedules(PipeSchedule kind, int stages,
                                                         int micro_batches) {
  return make_pipe_schedules(kind, PipeShape{stages, micro_batches, 1});
}

std::vector<PipeAction> make_pipe_schedule(PipeSchedule kind, int stage, int stages,
                                           int micro_batches) {
  return make_pipe_schedule(kind, stage, PipeShape{stages, micro_batches, 1});
}

}  // namespace fabkit::trainer
