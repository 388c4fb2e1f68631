// TensorBoard event files written directly (no TensorFlow, no protobuf library): point
// `tensorboard --logdir OUTPUT/tensorboard` at the directory while or after a run trains.
//
// Each call writes one whole record with one write(2) before it returns, so TensorBoard, which
// polls the file, sees complete steps while the run trains; a process killed between calls
// leaves only complete records. No fsync per step (on a network filesystem it would cost more
// than a small step): after a node crash the last steps may be missing, never half there.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "trainer/monitor/event_proto.h"

namespace fabkit::trainer::monitor {

// The tags fabtrain writes, grouped the way TensorBoard's scalar dashboard groups by prefix.
inline constexpr const char* kTagLoss = "train/loss";
inline constexpr const char* kTagLr = "train/lr";
inline constexpr const char* kTagTokensPerS = "train/tokens_per_s";
inline constexpr const char* kTagGradNorm = "train/grad_norm";
inline constexpr const char* kTagMemoryMib = "train/memory_mib";
inline constexpr const char* kTagEvalLoss = "eval/loss";
inline constexpr const char* kTagPipelineSchedule = "pipeline/schedule";

struct StepScalars {
  double loss = 0;
  double lr = 0;
  double tokens_per_s = 0;
  double grad_norm = 0;
  // Peak memory of this rank: the CUDA allocator's peak on GPU, max RSS on CPU. Negative: unknown,
  // not written.
  double memory_bytes = -1;
};

class EventWriter {
 public:
  // Creates dir (and its parents) and a new events.out.tfevents.<unix secs>.<host>.<pid> in it
  // (".N" appended if a writer of this process made one in the same second), and writes the
  // file_version record. Throws SysErrorException naming the path.
  static EventWriter create_in(const std::filesystem::path& dir);
  // Writes to exactly this file (created or truncated), file_version record first.
  static EventWriter create_file(const std::filesystem::path& file);

  EventWriter(EventWriter&&) = default;
  EventWriter& operator=(EventWriter&&) = default;

  // One Event with one Summary.Value per scalar. Throws SysErrorException {"write", errno, path}.
  void write_scalars(int64_t step, const std::vector<Scalar>& values);
  void write_step(int64_t step, const StepScalars& s);
  void write_eval(int64_t step, double eval_loss);
  // A text summary (Markdown in TensorBoard's text dashboard).
  void write_text(int64_t step, const std::string& tag, const std::string& text);

  const std::filesystem::path& path() const { return path_; }

 private:
  EventWriter(UniqueFd fd, std::filesystem::path path)
      : fd_(std::move(fd)), path_(std::move(path)) {}
  void write_record(const std::string& event);

  UniqueFd fd_;
  std::filesystem::path path_;
};

// events.out.tfevents.<unix_secs>.<host>.<pid>: the name TensorBoard's loader looks for
// ("tfevents" in it) and TensorFlow's own writers use. A '/' in host is replaced by '_'.
std::string event_file_name(int64_t unix_secs, const std::string& host, long pid);

double wall_time_now_s();  // seconds since the epoch, microsecond resolution

}  // namespace fabkit::trainer::monitor
