#include "trainer/eval/evaluate.h"

#include <cmath>
#include <numeric>

#include <torch/csrc/autograd/grad_mode.h>

#include "common/errors.h"
#include "trainer/data/batch.h"
#include "trainer/model/lm_loss.h"

namespace fabkit::trainer {

EvalSums evaluate_sums(LlamaModelImpl& model, const std::vector<Example>& examples,
                       const std::vector<size_t>& indices, size_t batch_size) {
  FABKIT_ENFORCE(batch_size >= 1, "batch_size must be >= 1");
  torch::NoGradGuard no_grad;
  EvalSums s;
  for (size_t at = 0; at < indices.size(); at += batch_size) {
    std::vector<size_t> idx(indices.begin() + at,
                            indices.begin() + std::min(indices.size(), at + batch_size));
    Batch b = make_batch(examples, idx);
    auto logits = model.forward(b.input_ids, b.attention_mask);
    LmLoss l = causal_lm_loss(logits, b.labels);
    s.loss_sum += l.sum.item<double>();
    s.tokens += l.tokens;
    s.examples += idx.size();
  }
  return s;
}

EvalResult finish_eval(const EvalSums& s) {
  if (s.tokens == 0)
    throw UsageError("evaluation counted no target tokens (every label is -100, or no data)");
  EvalResult r;
  r.mean_loss = s.loss_sum / static_cast<double>(s.tokens);
  r.perplexity = std::exp(r.mean_loss);
  r.tokens = s.tokens;
  r.examples = s.examples;
  return r;
}

EvalResult evaluate(LlamaModelImpl& model, const std::vector<Example>& examples, size_t batch_size) {
  std::vector<size_t> all(examples.size());
  std::iota(all.begin(), all.end(), size_t{0});
  return finish_eval(evaluate_sums(model, examples, all, batch_size));
}

Json to_json(const EvalResult& r) {
  Json j;
  j["mean_loss"] = r.mean_loss;
  j["perplexity"] = r.perplexity;
  j["tokens"] = r.tokens;
  j["examples"] = r.examples;
  return j;
}

}  // namespace fabkit::trainer
