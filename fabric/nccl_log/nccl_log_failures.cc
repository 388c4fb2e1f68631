#include "fabric/nccl_log/nccl_log_failures.h"

#include <algorithm>

#include "fabric/nccl_log/nccl_failure_kinds.h"

namespace fabkit::nccl_log {
namespace {
constexpr size_t kMaxSaidBy = 64;
}

void FailureBook::add(const NcclLogError& e, std::vector<NcclLogError>* kept) {
  auto [it, fresh] = index_.try_emplace(e.kind, groups_.size());
  if (fresh) {
    Group g;
    g.kind = e.kind;
    g.first = e;
    g.first_said = e;
    g.first_timed = e;
    g.time_format = e.time_format;
    groups_.push_back(std::move(g));
  }
  Group& g = groups_[it->second];
  // An exception quoting a CUDA error, printed before the WARN of the host that had it (Ray and
  // other launchers interleave streams): the WARN names who said it.
  if (!fresh && g.first_said.wrapped && !e.wrapped) g.first_said = e;
  // The watchdog's C++ frames name nobody; its what() line after them names the rank.
  else if (!fresh && g.first_said.who.empty() && !e.who.empty()) g.first_said = e;
  ++g.count;
  if (e.time_format == 0 || e.time_format != g.time_format) g.timed = false;
  if (g.timed && e.time_s < g.first_timed.time_s) g.first_timed = e;
  if (!e.who.empty() && g.said_by.size() < kMaxSaidBy &&
      std::find(g.said_by.begin(), g.said_by.end(), e.who) == g.said_by.end())
    g.said_by.push_back(e.who);
  // Past the caller's cap `kept` is null; finish() still appends each kind's first error, so
  // every failure points at a line.
  if (kept) kept->push_back(e);
}

void FailureBook::finish(NcclLogSummary& s) const {
  if (groups_.empty()) return;
  // A program error NCCL returned (ncclInvalidUsage: two ranks on one GPU, a bad argument) told
  // before any peer went away is what made the peers go: then it ranks with the root errors.
  // After a peer went away it is a consequence (a communicator used after it failed).
  long first_peer_loss = -1;
  for (const auto& g : groups_)
    if (failure_kind(g.kind).tier == FailureTier::kPeerLoss &&
        (first_peer_loss < 0 || g.first.order < first_peer_loss))
      first_peer_loss = g.first.order;
  auto tier = [&](const Group& g) {
    if (g.kind == "nccl_invalid_usage" && first_peer_loss >= 0 && g.first.order < first_peer_loss)
      return FailureTier::kRoot;
    return failure_kind(g.kind).tier;
  };
  // The tier that names the cause: the lowest present, conditions only when nothing else is.
  FailureTier best = FailureTier::kCondition;
  for (const auto& g : groups_) best = std::min(best, tier(g));
  // Times decide only when every candidate has them in one format; otherwise the position in
  // the input does (for one file, the order NCCL printed; across files, the order given).
  bool by_time = true;
  int fmt = -1;
  for (const auto& g : groups_) {
    if (tier(g) != best) continue;
    if (!g.timed || g.time_format == 0 || (fmt >= 0 && g.time_format != fmt)) by_time = false;
    fmt = g.time_format;
  }
  const Group* cause = nullptr;
  for (const auto& g : groups_) {
    if (tier(g) != best) continue;
    if (!cause) {
      cause = &g;
    } else if (g.first.explains != 0 && g.first.explains == cause->first.order) {
      cause = &g;  // the `Last error:` text that explains the exception chosen so far
    } else if (by_time) {
      if (g.first_timed.time_s < cause->first_timed.time_s ||
          (g.first_timed.time_s == cause->first_timed.time_s &&
           g.first_timed.order < cause->first_timed.order))
        cause = &g;
    } else if (g.first.order < cause->first.order) {
      cause = &g;
    }
  }
  s.cause_kind = cause->kind;
  s.order_by_time = by_time;
  std::vector<const Group*> order;
  for (const auto& g : groups_) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(), [&](const Group* a, const Group* b) {
    if ((a == cause) != (b == cause)) return a == cause;
    if (tier(*a) != tier(*b)) return tier(*a) < tier(*b);
    return a->first.order < b->first.order;
  });
  for (const Group* g : order) {
    const NcclLogError& first = by_time && g->timed ? g->first_timed : g->first_said;
    auto at = std::find_if(s.errors.begin(), s.errors.end(),
                           [&](const NcclLogError& e) { return e.order == first.order; });
    if (at == s.errors.end()) {
      s.errors.push_back(first);
      at = s.errors.end() - 1;
    }
    NcclFailure f;
    f.kind = g->kind;
    f.role = g == cause ? (tier(*g) == FailureTier::kCondition ? "condition" : "cause")
             : tier(*g) == FailureTier::kCondition ? "condition"
                                                   : "consequence";
    f.first_error = static_cast<size_t>(at - s.errors.begin());
    f.count = g->count;
    f.said_by = g->said_by;
    s.failures.push_back(std::move(f));
  }
}

}  // namespace fabkit::nccl_log
