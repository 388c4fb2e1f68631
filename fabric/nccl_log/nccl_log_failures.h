// Groups a log's error lines by failure kind and names the cause: the first error in time across
// ranks, among the kinds that can break a job by themselves; errors that report another
// process's failure (a peer that closed, a flushed QP, a watchdog timeout) are consequences
// unless nothing else is there. Pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fabric/nccl_log/nccl_log.h"

namespace fabkit::nccl_log {

class FailureBook {
 public:
  // Counts `e` in its kind; copies it into `kept` when non-null (the caller caps what it keeps;
  // the first error of each kind is kept regardless, so every failure points at a line).
  void add(const NcclLogError& e, std::vector<NcclLogError>* kept);
  // Fills s.failures, s.cause_kind and s.order_by_time.
  void finish(NcclLogSummary& s) const;

 private:
  struct Group {
    std::string kind;
    int count = 0;
    NcclLogError first;        // by position
    // The first by position that NCCL said itself (first when that one was NCCL's, or when no
    // NCCL line of the kind came): who to name when the times do not decide.
    NcclLogError first_said;
    NcclLogError first_timed;  // by time, when every error of the kind has one of one format
    bool timed = true;
    int time_format = 0;
    std::vector<std::string> said_by;
  };
  std::vector<Group> groups_;
  std::map<std::string, size_t> index_;
};

}  // namespace fabkit::nccl_log
