// One line of a job's output, as people paste it: NCCL's own `host:pid:tid [dev] NCCL INFO msg`
// behind whatever the launcher, the container runtime or the log collector put in front of it
// (RFC 3339 times, `[rank13]:`, `[1,3]<stdout>:`, Slurm's `0: `, pdsh's `host: `, CloudWatch's
// `| time |` table, kubectl's ANSI residue), or PyTorch's glog lines (`[rank0]:[E1206 18:44:12.7
// ProcessGroupNCCL.cpp:607] [Rank 0] ...`). Pure and allocation-light: it runs on every line.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fabkit::nccl_log {

enum class LineSource {
  kOther,     // not NCCL's and not PyTorch's (may still be a `Last error:` continuation)
  kNcclInfo,  // NCCL INFO (also 2.2's bare `INFO` after a `host:pid:tid [dev]` prefix)
  kNcclWarn,  // NCCL WARN
  kTorch,     // a PyTorch c10d glog line (`[E ProcessGroupNCCL.cpp:...]`)
};

// Times are comparable only within one format: an absolute date and time, or glog's month-day
// time without a year.
enum class TimeFormat { kNone = 0, kAbsolute = 1, kGlogNoYear = 2 };

struct LineOrigin {
  std::string host;  // NCCL's host name; empty when the line has no NCCL prefix
  long pid = -1;
  int cuda_dev = -1;
  std::optional<int> rank;  // from a launcher prefix or PyTorch's [Rank N]
  std::string label;        // a launcher's non-numeric tag: "trainer3" of `[trainer3]:`
  double time_s = 0;        // seconds; meaningful when time_format != kNone
  TimeFormat time_format = TimeFormat::kNone;
};

struct LogLine {
  std::string_view msg;  // the text after every prefix (NCCL's message for NCCL lines)
  LineSource source = LineSource::kOther;
  std::string_view nccl_file;  // "misc/socket.cc:46" before `NCCL WARN`, when present
  LineOrigin origin;
};

// NCCL's "host:pid:tid" token ("gpu-a1:4021:4087"; the host may be masked, the pid and tid are
// digits).
bool is_host_pid_tid(std::string_view tok);

// `line` must outlive the returned views.
LogLine split_log_line(std::string_view line);

// A rank PyTorch names inside a line's text ("[PG 3 Rank 5]", "[Rank 5]", "[4] is setting up NCCL
// communicator"); asked only of error lines without a rank prefix, not of every line.
std::optional<int> rank_in_text(std::string_view text);

}  // namespace fabkit::nccl_log
