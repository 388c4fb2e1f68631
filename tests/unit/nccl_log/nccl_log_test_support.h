// What the rule tests (nccl_log_*_test.cc) ask of one line or one parsed log.
#pragma once

#include <string>

#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_log/nccl_log_classify.h"
#include "fabric/nccl_log/nccl_log_line.h"

namespace fabkit::nccl_log::test_support {

// The failure kind the classifier gives one log line, "none" when it gives none.
inline std::string kind_of(const std::string& line) {
  const LogLine l = split_log_line(line);
  auto c = classify_message(l.msg, l.source, false);
  return c ? c->kind : "none";
}

// The error that opens the log's first failure.
inline const NcclLogError& first_error(const NcclLogSummary& s) {
  return s.errors.at(s.failures.at(0).first_error);
}

}  // namespace fabkit::nccl_log::test_support
