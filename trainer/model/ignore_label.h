// The label value that does not count in the loss: PyTorch's cross_entropy ignore_index default,
// which HF datasets and collators use.
#pragma once

#include <cstdint>

namespace fabkit::trainer {
constexpr int64_t kIgnoreLabel = -100;
}  // namespace fabkit::trainer
