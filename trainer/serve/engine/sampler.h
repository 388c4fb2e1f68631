// Choosing the next token from one position's logits, as Hugging Face's generate() does with
// do_sample: temperature, then top-k (TopKLogitsWarper), then top-p (TopPLogitsWarper), then a
// draw from the softmax. Temperature 0 is greedy. Plain C++ over a float row, so a request's
// draws depend only on its own seeded generator, never on the batch it ran in.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "trainer/serve/backend/generation_backend.h"

namespace fabkit::serve {

// The index of the largest logit, ties to the lowest id (torch.argmax's choice).
int64_t argmax_token(const float* logits, int64_t vocab);

// greedy when params.temperature == 0; else one draw from rng. Precondition: the params were
// validated (sampling_params_error returns "").
int64_t sample_token(const float* logits, int64_t vocab, const SamplingParams& params,
                     std::mt19937_64& rng);

// What is wrong with params, naming the field and its allowed range; "" when valid.
std::string sampling_params_error(const SamplingParams& params);

// A uniform double in [0, 1) from 53 bits of one draw: the same on every standard library
// (std::uniform_real_distribution's algorithm is not specified), so a seed means the same tokens.
double uniform_01(std::mt19937_64& rng);

}  // namespace fabkit::serve
