// Cosine decay with linear warmup (the shape of HF's get_cosine_schedule_with_warmup):
// lr rises linearly over warmup_steps (the first update gets peak/(warmup+1), not a wasted 0), then follows a half cosine to min_lr_ratio * peak
// at total_steps.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace fabkit::trainer {

struct CosineSchedule {
  double peak_lr = 1e-4;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  double min_lr_ratio = 0.0;

  // step counts completed optimizer steps: the first update uses lr_at(0).
  double lr_at(int64_t step) const {
    if (step < warmup_steps) return peak_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps + 1);
    double span = static_cast<double>(total_steps - warmup_steps);
    double progress = span <= 0 ? 1.0 : std::min(1.0, static_cast<double>(step - warmup_steps) / span);
    double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
    return peak_lr * (min_lr_ratio + (1.0 - min_lr_ratio) * cosine);
  }
};

}  // namespace fabkit::trainer
