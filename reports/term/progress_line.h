// The progress line on stderr: on a terminal one line redrawn in place (carriage return + erase
// to end of line), so a long run does not scroll thousands of lines past; into a file or pipe
// (Slurm's job output, `| tee`) plain lines, because a carriage return there makes one unreadable
// multi-megabyte line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fabkit::reports::term {

struct Progress {
  int64_t step = 0;
  int64_t total_steps = 0;
  double loss = 0;
  double tokens_per_s = 0;
  std::optional<double> eta_s;  // EtaEstimator::seconds_left
};

// "step 120/1000  loss 2.3457  tokens/s 12345  ETA 3m07s"
std::string format_progress(const Progress& p);

class ProgressLine {
 public:
  // Terminal or not is isatty(fd): the real decision, made once.
  explicit ProgressLine(int fd);
  ProgressLine(int fd, bool is_tty) : fd_(fd), tty_(is_tty) {}
  ~ProgressLine() { finish(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void update(const Progress& p);
  // Any one-line text, redrawn the same way (fabcheck's measurement progress, measure_progress.h).
  void draw(const std::string& text);
  // Before printing anything else on the same terminal: erases the drawn line (no-op otherwise).
  void clear();
  // Ends the redrawn line with a newline so later output starts on its own line.
  void finish();
  bool is_tty() const { return tty_; }

 private:
  void emit(const std::string& s);
  int fd_;
  bool tty_;
  bool drawn_ = false;
};

}  // namespace fabkit::reports::term
