// The seam between fabtrain serve's HTTP side (requests, text, chat templates, stop strings,
// streaming) and its model side (KV cache, batched decode steps, sampling). Token ids only cross
// it, so the HTTP side is tested against a fake backend without LibTorch, and the engine without
// a socket. Plain C++: no torch headers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fabkit::serve {

// OpenAI's sampling fields, already validated by the HTTP side (temperature >= 0, 0 < top_p <= 1,
// top_k >= 0). temperature 0 is greedy (argmax, ties to the lowest id, as torch.argmax).
struct SamplingParams {
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = 0;                 // 0 = off
  std::optional<uint64_t> seed;      // same seed, prompt and params -> same tokens
};

struct GenerationRequest {
  std::vector<int64_t> prompt;       // token ids, BOS included when the model wants one
  int64_t max_tokens = 16;           // >= 1; prompt + max_tokens <= context_length()
  SamplingParams sampling;
  std::vector<int64_t> stop_token_ids;  // EOS and the like: generated, reported, then finished
};

enum class FinishReason { kNone, kStop, kLength, kCancelled, kError };

// One generated token, or the end of the request (last = true; token is -1 when the request ends
// without a new token: cancelled, error).
struct TokenEvent {
  int64_t token = -1;
  bool last = false;
  FinishReason finish = FinishReason::kNone;  // set when last
  std::string error;                          // when finish == kError
};

// Called on the backend's own thread, in order, once per token and once with last = true.
// Returning false cancels the request (its client went away, a stop string matched): the backend
// frees its slot before the next decode step and calls no more.
using TokenSink = std::function<bool(const TokenEvent&)>;

struct BackendStats {
  int64_t queued = 0;            // waiting for a slot
  int64_t running = 0;           // in the decode batch
  int64_t queue_capacity = 0;
  int64_t max_batch = 0;
  uint64_t prompt_tokens = 0;    // totals since start
  uint64_t generated_tokens = 0;
  uint64_t decode_steps = 0;
};

class GenerationBackend {
 public:
  virtual ~GenerationBackend() = default;
  // Queues the request. false when the queue is full (the caller answers 503); the sink is then
  // never called. A request joins the running batch between decode steps.
  virtual bool submit(GenerationRequest request, TokenSink sink) = 0;
  virtual int64_t context_length() const = 0;  // prompt + generated tokens a request may hold
  virtual int64_t vocab_size() const = 0;
  virtual BackendStats stats() const = 0;
};

}  // namespace fabkit::serve
