#include "trainer/model/attention.h"

#include <ATen/ATen.h>

#include "common/errors.h"

namespace fabkit::trainer {

at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& mask, std::optional<double> scale) {
  FABKIT_ENFORCE(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
                 "attention: q, k, v must be [B, heads, T, D]");
  const int64_t heads = q.size(1), kv_heads = k.size(1);
  FABKIT_ENFORCE(kv_heads > 0 && heads % kv_heads == 0 && v.size(1) == kv_heads,
                 "attention: query heads must be a multiple of key/value heads");
  FABKIT_ENFORCE(!mask.defined() || mask.scalar_type() == at::kBool,
                 "attention: the mask must be bool (true = attend)");
  // A bool mask, not an additive one: torch turns it into -inf where false inside the kernel's
  // own fp32 arithmetic, so no large negative number is ever added to scores in the activations'
  // dtype (fp16's lowest, -65504, plus a negative score rounds to -inf).
  std::optional<at::Tensor> attn_mask;
  if (mask.defined()) attn_mask = mask;
  return at::scaled_dot_product_attention(q, k, v, attn_mask, /*dropout_p=*/0.0,
                                          /*is_causal=*/!mask.defined(), scale,
                                          /*enable_gqa=*/heads != kv_heads);
}

}  // namespace fabkit::trainer
