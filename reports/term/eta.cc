#include "reports/term/eta.h"

#include <cmath>
#include <cstdio>

namespace fabkit::reports::term {

void EtaEstimator::observe(int64_t step, double now_s) {
  // A resumed or restarted count (step went back) starts a new measurement.
  if (!seen_.empty() && step < seen_.back().first) seen_.clear();
  seen_.emplace_back(step, now_s);
  while (seen_.size() > window_) seen_.pop_front();
}

std::optional<double> EtaEstimator::seconds_left(int64_t total_steps) const {
  if (seen_.size() < 2) return std::nullopt;
  const auto& [s0, t0] = seen_.front();
  const auto& [s1, t1] = seen_.back();
  if (s1 <= s0 || t1 <= t0) return std::nullopt;
  const double s_per_step = (t1 - t0) / static_cast<double>(s1 - s0);
  const int64_t left = total_steps > s1 ? total_steps - s1 : 0;
  return s_per_step * static_cast<double>(left);
}

std::string format_duration(std::optional<double> seconds) {
  if (!seconds || !std::isfinite(*seconds) || *seconds < 0) return "--";
  const long long s = std::llround(*seconds);
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else if (s < 86400)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  else
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", s / 86400, (s % 86400) / 3600);
  return buf;
}

}  // namespace fabkit::reports::term
