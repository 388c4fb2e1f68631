// fabtrain's output: readable lines on stderr (rank 0, or every rank for warnings/errors) and
// JSONL metrics in OUTPUT/metrics.jsonl (rank 0; docs/fabtrain.md describes the fields).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "common/json.h"

namespace fabkit::trainer {

class TrainLog {
 public:
  explicit TrainLog(int rank) : rank_(rank) {}
  void open_metrics(const std::filesystem::path& file);  // rank 0 only; appends (resume)
  void info(const std::string& line) const;               // rank 0
  void warn(const std::string& line) const;               // every rank, with the rank
  void step(const Json& m);                               // one line + one JSONL record
  void eval(const Json& m);

 private:
  void record(const Json& m);
  int rank_;
  std::ofstream metrics_;
};

int64_t max_rss_bytes();  // getrusage: the process's peak resident set

}  // namespace fabkit::trainer
