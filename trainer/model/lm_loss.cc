#include "trainer/model/lm_loss.h"

#include "common/errors.h"
#include "trainer/model/cross_entropy_cpu.h"

namespace fabkit::trainer {

namespace {

// The shifted targets ([B*T], -100 where nothing is predicted) and the logits [B*T,V] in their
// own dtype (the softmax upcasts: a whole fp32 copy only on the op-by-op path).
struct Shifted {
  at::Tensor logits, targets, keep;
};

Shifted shift(const at::Tensor& logits, const at::Tensor& labels) {
  FABKIT_ENFORCE(logits.dim() == 3 && labels.dim() == 2 && logits.size(0) == labels.size(0) &&
                     logits.size(1) == labels.size(1),
                 "causal_lm_loss: logits [B,T,V] and labels [B,T] disagree");
  const int64_t v = logits.size(2);
  // Shift the labels, not the logits: position t's target is labels[t+1] and the last position
  // has none (-100). Slicing the logits instead copied the whole [B,T-1,V] block forward and
  // zero-filled + copied it again in the backward; the extra last row costs 1/T of the softmax.
  auto all_logits = logits.reshape({-1, v});
  auto targets = at::cat({labels.slice(1, 1), at::full({labels.size(0), 1}, kIgnoreLabel, labels.options())}, 1)
                     .reshape({-1});
  auto keep = targets != kIgnoreLabel;
  return {all_logits, targets, keep};
}

at::Tensor nll_sum(const Shifted& s) {
  // CPU fp32/bf16: one fused pass each way (cross_entropy_cpu.h), same maths.
  if (cross_entropy_cpu_supports(s.logits))
    return cross_entropy_sum_cpu(s.logits, s.targets, kIgnoreLabel);
  // log_softmax + gather instead of cross_entropy(reduction=sum): identical maths, and the
  // masked positions never index the vocabulary with -100.
  auto logp = at::log_softmax(s.logits.to(at::kFloat), -1);
  auto safe = at::where(s.keep, s.targets, at::zeros_like(s.targets));
  auto nll = -logp.gather(1, safe.unsqueeze(1)).squeeze(1);
  return (nll * s.keep.to(at::kFloat)).sum();
}

}  // namespace

LmLoss causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels) {
  const Shifted s = shift(logits, labels);
  LmLoss out;
  out.tokens = s.keep.sum().item<int64_t>();
  out.sum = nll_sum(s);
  return out;
}

at::Tensor causal_lm_loss_sum(const at::Tensor& logits, const at::Tensor& labels) {
  return nll_sum(shift(logits, labels));
}

}  // namespace fabkit::trainer
