#include "trainer/parallel/pipeline_schedule.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "common/errors.h"

namespace fabkit::trainer {
namespace {

bool is_compute(PipeOp op) { return op == PipeOp::kForward || op == PipeOp::kBackward; }

// The forwards and backwards of one stage, in order.
std::vector<PipeAction> compute_order(PipeSchedule kind, int stage, int stages, int m) {
  std::vector<PipeAction> out;
  if (kind == PipeSchedule::kGPipe) {
    for (int i = 0; i < m; ++i) out.push_back({PipeOp::kForward, i});
    // Reverse order: the last micro-batch's activations are the freshest and the first the
    // last stage can start on, so no stage waits on a gradient it cannot get yet.
    for (int i = m; i-- > 0;) out.push_back({PipeOp::kBackward, i});
    return out;
  }
  const int warmup = std::min(stages - 1 - stage, m);
  for (int i = 0; i < warmup; ++i) out.push_back({PipeOp::kForward, i});
  for (int i = 0; i < m - warmup; ++i) {
    out.push_back({PipeOp::kForward, warmup + i});
    out.push_back({PipeOp::kBackward, i});
  }
  for (int i = m - warmup; i < m; ++i) out.push_back({PipeOp::kBackward, i});
  return out;
}

// The peer stage of a communication action.
int peer_of(PipeOp op, int stage) {
  return (op == PipeOp::kRecvActivation || op == PipeOp::kSendGrad) ? stage - 1 : stage + 1;
}

// The action the peer must be at for `a` to complete.
PipeOp matching(PipeOp op) {
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

}  // namespace

PipeSchedule parse_pipe_schedule(const std::string& name) {
  if (name == "gpipe") return PipeSchedule::kGPipe;
  if (name == "1f1b") return PipeSchedule::k1F1B;
  throw UsageError("--schedule " + name + " is not a pipeline schedule: use gpipe or 1f1b");
}

std::string to_string(PipeSchedule s) { return s == PipeSchedule::kGPipe ? "gpipe" : "1f1b"; }

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
  }
  return "?";
}

std::vector<std::vector<PipeAction>> make_pipe_schedules(PipeSchedule kind, int stages, int m) {
  FABKIT_ENFORCE(stages >= 1 && m >= 1, "bad pipeline shape");
  // Per stage: segments of (the unordered communication before a computation, the computation).
  // The sends after one computation and the receives before the next form one group.
  struct Segment {
    std::vector<PipeAction> comm;
    std::optional<PipeAction> compute;
  };
  std::vector<std::vector<Segment>> seg(static_cast<size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    const bool first = s == 0, last = s == stages - 1;
    Segment cur;
    for (const PipeAction& c : compute_order(kind, s, stages, m)) {
      if (c.op == PipeOp::kForward && !first)
        cur.comm.push_back({PipeOp::kRecvActivation, c.micro_batch});
      if (c.op == PipeOp::kBackward && !last)
        cur.comm.push_back({PipeOp::kRecvGrad, c.micro_batch});
      cur.compute = c;
      seg[s].push_back(cur);
      cur = Segment{};
      if (c.op == PipeOp::kForward && !last)
        cur.comm.push_back({PipeOp::kSendActivation, c.micro_batch});
      if (c.op == PipeOp::kBackward && !first)
        cur.comm.push_back({PipeOp::kSendGrad, c.micro_batch});
    }
    seg[s].push_back(cur);  // the last sends, no computation after them
  }
  // Play all stages together, letting a group's transfers complete in whatever order its
  // neighbours are ready for (as if the stage waited on all of them at once), and write each
  // stage's list in the order they completed. Replayed with blocking calls, every list then meets
  // its neighbours in that same global order, so none can wait forever (the test replays them
  // under rendezvous semantics). Every rank computes the same lists: the play is deterministic.
  std::vector<std::vector<PipeAction>> out(static_cast<size_t>(stages));
  std::vector<size_t> at(static_cast<size_t>(stages), 0);
  auto pending = [&](int s) -> std::vector<PipeAction>* {
    return at[s] < seg[s].size() ? &seg[s][at[s]].comm : nullptr;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < stages; ++s) {
      while (at[s] < seg[s].size() && seg[s][at[s]].comm.empty()) {
        if (seg[s][at[s]].compute) out[s].push_back(*seg[s][at[s]].compute);
        ++at[s];
        progress = true;
      }
      std::vector<PipeAction>* mine = pending(s);
      if (!mine) continue;
      for (size_t i = 0; i < mine->size(); ++i) {
        const PipeAction a = (*mine)[i];
        const int p = peer_of(a.op, s);
        std::vector<PipeAction>* theirs = pending(p);
        if (!theirs) continue;
        auto it =
            std::find(theirs->begin(), theirs->end(), PipeAction{matching(a.op), a.micro_batch});
        if (it == theirs->end()) continue;
        out[s].push_back(a);
        out[p].push_back(*it);
        theirs->erase(it);
        mine->erase(mine->begin() + static_cast<std::ptrdiff_t>(i));
        progress = true;
        break;  // mine changed: look again on the next pass
      }
    }
  }
  for (int s = 0; s < stages; ++s) {
    FABKIT_ENFORCE(at[s] == seg[s].size(), "pipeline schedule " + to_string(kind) +
                                               " cannot complete at stage " + std::to_string(s) +
                                               " (S=" + std::to_string(stages) +
                                               ", M=" + std::to_string(m) + ")");
  }
  return out;
}

std::vector<PipeAction> make_pipe_schedule(PipeSchedule kind, int stage, int stages, int m) {
  FABKIT_ENFORCE(stage >= 0 && stage < stages, "bad pipeline stage");
  return make_pipe_schedules(kind, stages, m)[static_cast<size_t>(stage)];
}

std::string simulate_rendezvous(const std::vector<std::vector<PipeAction>>& per_stage) {
  const int n = static_cast<int>(per_stage.size());
  std::vector<size_t> pc(static_cast<size_t>(n), 0);
  auto at_end = [&](int s) { return pc[s] >= per_stage[s].size(); };
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < n; ++s) {
      while (!at_end(s) && is_compute(per_stage[s][pc[s]].op)) {
        ++pc[s];
        progress = true;
      }
      if (at_end(s)) continue;
      const PipeAction& a = per_stage[s][pc[s]];
      const int p = peer_of(a.op, s);
      if (p < 0 || p >= n)
        return "stage " + std::to_string(s) + " " + to_string(a.op) + " has no peer stage";
      if (at_end(p)) continue;
      const PipeAction& b = per_stage[p][pc[p]];
      if (is_compute(b.op) || b.op != matching(a.op) || peer_of(b.op, p) != s) continue;
      if (b.micro_batch != a.micro_batch) {
        return "stage " + std::to_string(s) + " " + to_string(a.op) + "(" +
               std::to_string(a.micro_batch) + ") met stage " + std::to_string(p) + " " +
               to_string(b.op) + "(" + std::to_string(b.micro_batch) + ")";
      }
      ++pc[s];
      ++pc[p];
      progress = true;
    }
  }
  std::ostringstream blocked;
  for (int s = 0; s < n; ++s) {
    if (at_end(s)) continue;
    const PipeAction& a = per_stage[s][pc[s]];
    blocked << (blocked.tellp() > 0 ? "; " : "") << "stage " << s << " waits at " << to_string(a.op)
            << "(" << a.micro_batch << ")";
  }
  return blocked.str();
}

int peak_in_flight(const std::vector<PipeAction>& actions) {
  int live = 0, peak = 0;
  for (const auto& a : actions) {
    if (a.op == PipeOp::kForward) peak = std::max(peak, ++live);
    if (a.op == PipeOp::kBackward) --live;
  }
  return peak;
}

double bubble_fraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

int pipe_tag(PipeOp op, int micro_batch) {
  const bool grad = op == PipeOp::kSendGrad || op == PipeOp::kRecvGrad;
  FABKIT_ENFORCE(!is_compute(op), "computations have no tag");
  // Kept far below 2^30 (the backend's tags): micro-batch counts are validated to be small.
  return 2 * micro_batch + (grad ? 1 : 0);
}

}  // namespace fabkit::trainer
