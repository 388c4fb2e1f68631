#include "trainer/model/lm_loss.h"

#include "common/errors.h"

namespace fabkit::trainer {

LmLoss causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels) {
  FABKIT_ENFORCE(logits.dim() == 3 && labels.dim() == 2 && logits.size(0) == labels.size(0) &&
                     logits.size(1) == labels.size(1),
                 "causal_lm_loss: logits [B,T,V] and labels [B,T] disagree");
  int64_t t = logits.size(1);
  int64_t v = logits.size(2);
  auto shifted_logits = logits.slice(1, 0, t - 1).reshape({-1, v}).to(at::kFloat);
  auto targets = labels.slice(1, 1, t).reshape({-1});
  auto keep = targets != kIgnoreLabel;
  LmLoss out;
  out.tokens = keep.sum().item<int64_t>();
  // log_softmax + gather instead of cross_entropy(reduction=sum): identical maths, and the
  // masked positions never index the vocabulary with -100.
  auto logp = at::log_softmax(shifted_logits, -1);
  auto safe = at::where(keep, targets, at::zeros_like(targets));
  auto nll = -logp.gather(1, safe.unsqueeze(1)).squeeze(1);
  out.sum = (nll * keep.to(at::kFloat)).sum();
  return out;
}

}  // namespace fabkit::trainer
