#include "trainer/model/lm_loss.h"

#include "common/errors.h"

namespace fabkit::trainer {

LmLoss causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels) {
  FABKIT_ENFORCE(logits.dim() == 3 && labels.dim() == 2 && logits.size(0) == labels.size(0) &&
                     logits.size(1) == labels.size(1),
                 "causal_lm_loss: logits [B,T,V] and labels [B,T] disagree");
  const int64_t v = logits.size(2);
  // Shift the labels, not the logits: position t's target is labels[t+1] and the last position
  // has none (-100). Slicing the logits instead copied the whole [B,T-1,V] block forward and
  // zero-filled + copied it again in the backward; the extra last row costs 1/T of the softmax.
  auto all_logits = logits.reshape({-1, v}).to(at::kFloat);
  auto targets = at::cat({labels.slice(1, 1), at::full({labels.size(0), 1}, kIgnoreLabel, labels.options())}, 1)
                     .reshape({-1});
  auto keep = targets != kIgnoreLabel;
  LmLoss out;
  out.tokens = keep.sum().item<int64_t>();
  // log_softmax + gather instead of cross_entropy(reduction=sum): identical maths, and the
  // masked positions never index the vocabulary with -100.
  auto logp = at::log_softmax(all_logits, -1);
  auto safe = at::where(keep, targets, at::zeros_like(targets));
  auto nll = -logp.gather(1, safe.unsqueeze(1)).squeeze(1);
  out.sum = (nll * keep.to(at::kFloat)).sum();
  return out;
}

}  // namespace fabkit::trainer
