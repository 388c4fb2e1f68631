#include "trainer/data/batch.h"

#include <cstring>

#include "common/errors.h"

namespace fabkit::trainer {

Batch make_batch(const std::vector<Example>& examples, const std::vector<size_t>& indices) {
  FABKIT_ENFORCE(!indices.empty(), "make_batch: no indices");
  int64_t b = static_cast<int64_t>(indices.size());
  int64_t t = static_cast<int64_t>(examples.at(indices[0]).input_ids.size());
  Batch out{at::empty({b, t}, at::kLong), at::empty({b, t}, at::kLong), at::empty({b, t}, at::kLong)};
  for (int64_t i = 0; i < b; ++i) {
    const Example& e = examples.at(indices[i]);
    FABKIT_ENFORCE(static_cast<int64_t>(e.input_ids.size()) == t, "examples of different lengths");
    size_t bytes = t * sizeof(int64_t);
    std::memcpy(out.input_ids[i].data_ptr<int64_t>(), e.input_ids.data(), bytes);
    std::memcpy(out.labels[i].data_ptr<int64_t>(), e.labels.data(), bytes);
    std::memcpy(out.attention_mask[i].data_ptr<int64_t>(), e.attention_mask.data(), bytes);
  }
  return out;
}

}  // namespace fabkit::trainer
