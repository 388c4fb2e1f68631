// Time left in a run, from the recent step rate. Shared by the progress line and the control
// interface's `status`, so both print the same ETA.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>

namespace fabkit::reports::term {

class EtaEstimator {
 public:
  // window: how many recent observations the rate is measured over. A window, not the whole run:
  // the first steps (allocator warm-up, NCCL connection setup) are slower than the rest, and a
  // rate since the start would overstate the time left for a long while.
  explicit EtaEstimator(size_t window = 32) : window_(window < 2 ? 2 : window) {}

  void observe(int64_t step, double now_s);
  // nullopt until two observations with different steps and times exist.
  std::optional<double> seconds_left(int64_t total_steps) const;

 private:
  size_t window_;
  std::deque<std::pair<int64_t, double>> seen_;  // (step, time)
};

// "45s", "3m07s", "1h02m", "2d03h"; "--" for unknown or negative/non-finite.
std::string format_duration(std::optional<double> seconds);

}  // namespace fabkit::reports::term
