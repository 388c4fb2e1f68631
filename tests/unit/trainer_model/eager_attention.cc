#include "tests/unit/trainer_model/eager_attention.h"

#include <cmath>
#include <limits>

#include <ATen/ATen.h>

namespace fabkit::trainer {

at::Tensor eager_attention_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                     const at::Tensor& mask, std::optional<double> scale) {
  const int64_t t = q.size(2), rep = q.size(1) / k.size(1);
  // HF's repeat_kv: kv head h serves query heads h*rep .. h*rep+rep-1.
  auto kr = k.repeat_interleave(rep, 1), vr = v.repeat_interleave(rep, 1);
  auto scores =
      at::matmul(q, kr.transpose(2, 3)) * scale.value_or(1.0 / std::sqrt(double(q.size(-1))));
  auto allowed = mask.defined() ? mask : at::ones({t, t}, q.options().dtype(at::kBool)).tril();
  // masked_fill, not an added bias: nothing is added to the scores in their own dtype.
  scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
  auto probs = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
  return at::matmul(probs, vr);
}

}  // namespace fabkit::trainer
