// fabcheck's progress for long measurements, on stderr and only on a terminal: a bar with percent
// and ETA when the amount of work is known (sizes of a sweep, pairs of a round), a spinner with
// the elapsed time when not, after a label saying what is measured. Quiet by design elsewhere:
// into a pipe or a file (Slurm job output, CI logs) it writes nothing at all, since redrawn lines
// there are noise and stdout carries the result. docs/reports.md, "Progress".
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/progress.h"
#include "reports/term/eta.h"
#include "reports/term/progress_line.h"

namespace fabkit::reports::term {

// One frame's text, without the carriage return and erase codes. total 0: the spinner form
// ("| pair: launch agents  3s"); else the bar ("allreduce gloo-tcp 64 MiB  [#####-----]  50%
// 13/26  ETA 12s"). The label is cut so the frame fits in columns - 1 (a full-width line would
// wrap, and the next carriage return would redraw only its second half).
std::string format_measure_frame(const std::string& label, uint64_t done, uint64_t total,
                                 double elapsed_s, std::optional<double> eta_s, int spin,
                                 size_t columns);

struct MeasureProgressOptions {
  int fd = 2;
  std::optional<bool> is_tty;     // default: isatty(fd), decided once
  bool enabled = true;            // false: --no-progress
  std::function<double()> now_s;  // default: a steady clock, in seconds
  size_t columns = 0;             // 0: the terminal's width at each frame (80 if unknown)
  // A thread redraws every 100 ms while a step blocks (the spinner turns, elapsed and ETA move).
  // Unit tests turn it off and call tick() with a fake clock.
  bool redraw_thread = true;
  double delay_s = 1.0;       // nothing is drawn before a measurement has run this long
  double min_redraw_s = 0.1;  // at most ~10 frames a second
};

class MeasureProgress : public ProgressSink {
 public:
  explicit MeasureProgress(MeasureProgressOptions o = {});
  ~MeasureProgress() override;  // stops the redraw thread and erases the line
  MeasureProgress(const MeasureProgress&) = delete;
  MeasureProgress& operator=(const MeasureProgress&) = delete;

  void begin(const std::string& label, uint64_t total_units) override;
  void advance(uint64_t units, const std::string& label = "") override;
  void set_total(uint64_t total_units) override;
  void end() override;

  // Redraws when a frame is due (what the redraw thread calls).
  void tick();
  // Erases the drawn line: call before writing anything else to the same stderr.
  void clear();
  // Whether this renderer ever writes: a terminal and not --no-progress.
  bool active() const { return active_; }

 private:
  void draw_if_due(double now);  // mu_ held
  void erase();                  // mu_ held
  void redraw_loop();

  MeasureProgressOptions o_;
  bool active_;
  ProgressLine line_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread redraw_;

  bool open_ = false;
  std::string label_;
  uint64_t total_ = 0, done_ = 0;
  double start_s_ = 0;
  std::optional<double> last_frame_s_;
  bool drawn_ = false;
  int spin_ = 0;
  EtaEstimator eta_;
};

}  // namespace fabkit::reports::term
