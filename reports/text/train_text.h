// fabtrain's readable lines: one per logged step and per evaluation, from the same metrics record
// that goes to metrics.jsonl (docs/fabtrain.md lists its fields). The caller adds the
// "[fabtrain] " prefix and chooses the stream.
#pragma once

#include <string>

#include "common/json.h"

namespace fabkit::reports::text {

// "step 120/1000  loss 2.34567  lr 3.000e-04  grad_norm 0.9876  tokens/s 12345  step 41.2 ms
//  state/rank 1.50 MiB  rss 812 MiB". Throws nlohmann's type_error when a field is missing:
// the record is built by fabtrain, so that is a bug, not input.
std::string format_step_line(const Json& metrics);
// "eval at step 200  valid_loss 2.10000  perplexity 8.166"
std::string format_eval_line(const Json& metrics);

}  // namespace fabkit::reports::text
