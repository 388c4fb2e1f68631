// Mean token loss and perplexity of a model over examples: the number `fabtrain eval` prints and
// the training loop's periodic evaluation. Sums and counts are returned separately so a
// data-parallel caller can all-reduce them before dividing (exact, not a mean of means).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/json.h"
#include "trainer/data/dataset.h"
#include "trainer/model/llama.h"

namespace fabkit::trainer {

struct EvalSums {
  double loss_sum = 0;  // summed token cross-entropy (nats)
  int64_t tokens = 0;   // target tokens counted
  size_t examples = 0;
};

struct EvalResult {
  double mean_loss = 0;
  double perplexity = 0;  // exp(mean_loss)
  int64_t tokens = 0;
  size_t examples = 0;
};

// Runs the model (no grad) on examples[indices] in batches of batch_size.
EvalSums evaluate_sums(LlamaModelImpl& model, const std::vector<Example>& examples,
                       const std::vector<size_t>& indices, size_t batch_size);
EvalResult finish_eval(const EvalSums& s);  // UsageError when no token was counted
EvalResult evaluate(LlamaModelImpl& model, const std::vector<Example>& examples, size_t batch_size);

Json to_json(const EvalResult& r);

}  // namespace fabkit::trainer
