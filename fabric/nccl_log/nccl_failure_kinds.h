// The failure kinds `fabcheck nccl-log` names, each with what it means, its likely causes in
// order, and the fix. One table, so the classifier, the judge, the docs and the tests share the
// same words (docs/findings/nccl_log.md lists them; a unit test checks every kind has its text).
#pragma once

#include <string>
#include <vector>

namespace fabkit::nccl_log {

// Why a kind is ranked: a log of a failed job holds the error that broke it and the errors it
// caused on every other rank. The cause is the earliest error of the lowest tier present.
enum class FailureTier {
  kRoot = 0,      // can break a job by itself: a verbs call, a CUDA error, a connect refused
  kPeerLoss = 1,  // reports that another process or the link went away: usually a consequence
  kWrapper =
      2,  // a framework's or NCCL's summary of an error told elsewhere (watchdog, ncclXError)
  kCondition = 3,  // not a failure on its own (libibverbs missing: NCCL ran over sockets)
};

struct FailureKind {
  const char* kind;  // "transport_retry_exceeded": the finding code is nccl_log.<kind>
  FailureTier tier;
  const char* title;                // a few words: "IB retry count exceeded"
  const char* meaning;              // what the message says happened
  std::vector<const char*> causes;  // most likely first
  const char* fix;
};

// Every kind, in the order docs list them. `nccl_warning` is the kind of an unclassified WARN.
const std::vector<FailureKind>& failure_kinds();
// The entry for `kind`; the `nccl_warning` entry for an unknown name (never null).
const FailureKind& failure_kind(const std::string& kind);
const char* to_string(FailureTier tier);

}  // namespace fabkit::nccl_log
