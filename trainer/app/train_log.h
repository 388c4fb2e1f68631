// fabtrain's output: readable lines on stderr (rank 0, or every rank for warnings/errors) and
// JSONL metrics in OUTPUT/metrics.jsonl (rank 0; docs/fabtrain.md describes the fields).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "common/json.h"
#include "reports/term/progress_line.h"

namespace fabkit::trainer {

class TrainLog {
 public:
  explicit TrainLog(int rank) : rank_(rank) {}
  void open_metrics(const std::filesystem::path& file);  // rank 0 only; appends (resume)
  void info(const std::string& line) const;               // rank 0
  void warn(const std::string& line) const;               // every rank, with the rank
  void step(const Json& m);                               // one line + one JSONL record
  void eval(const Json& m);
  // Rank 0 on a terminal: the progress line replaces the per-step lines (metrics.jsonl still gets
  // every record) and is cleared before any other line. Into a file or pipe nothing changes.
  void attach_progress(reports::term::ProgressLine* p) { progress_ = p; }

 private:
  void record(const Json& m);
  void before_line() const {
    if (progress_) progress_->clear();
  }
  int rank_;
  std::ofstream metrics_;
  reports::term::ProgressLine* progress_ = nullptr;
};

int64_t max_rss_bytes();  // getrusage: the process's peak resident set

}  // namespace fabkit::trainer
