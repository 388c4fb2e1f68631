// Helpers for running fabtrain in tests: a tiny model directory, JSONL data, and running the
// binary with a deadline.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"

namespace fabkit::testing {

// config.json of a 2-layer Llama (no weights: fabtrain seeds the init).
void write_tiny_model(const std::filesystem::path& dir, bool tied, int layers = 2);
// `records` lines of {"input_ids": [...]} with `len` ids each, deterministic.
void write_token_data(const std::filesystem::path& file, int records, int len, int vocab);

struct RunResult {
  int exit_code = -1;     // 128 + signal when killed
  std::string output;     // stdout + stderr
  double seconds = 0;
};
// Runs FABTRAIN_BIN with args; kills it (SIGKILL) at the deadline. data_limit_bytes > 0 caps its
// heap (RLIMIT_DATA), so a test of input without end fails instead of exhausting the machine.
RunResult run_fabtrain(const std::vector<std::string>& args, int timeout_s = 240,
                       uint64_t data_limit_bytes = 0);

// The same in two steps, so several fabtrain processes (ranks launched by hand, as srun would)
// run at once; `env` entries (NAME=VALUE) are added to the inherited environment.
struct Started {
  int pid = -1;
  std::string output_file;
  std::chrono::steady_clock::time_point t0;
};
Started start_fabtrain(const std::vector<std::string>& args,
                       const std::vector<std::string>& env = {}, uint64_t data_limit_bytes = 0);
RunResult finish_fabtrain(const Started& s, int timeout_s = 240);

std::vector<Json> read_jsonl(const std::filesystem::path& file);
// The step records of a run's OUTPUT/metrics.jsonl (those with a loss), and their losses.
std::vector<Json> steps_of(const std::filesystem::path& out);
std::vector<double> losses(const std::filesystem::path& out);

}  // namespace fabkit::testing
