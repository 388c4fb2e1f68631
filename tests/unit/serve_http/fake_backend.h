// A GenerationBackend without a model, for testing the HTTP side: it "generates" a deterministic
// token sequence derived from the prompt (the prompt's tokens again, cycled: a byte tokenizer makes
// that the prompt's text repeated), or a fixed script, at a configurable pace, on its own thread,
// with a real queue and decode batch: submit() refuses when the queue is full, requests join the
// batch between steps, and a sink returning false frees the slot before the next step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "trainer/serve/backend/generation_backend.h"

namespace fabkit::serve::fake {

struct FakeBackendOptions {
  int64_t context_length = 256;
  int64_t vocab_size = 261;  // ByteTokenizer's
  int64_t max_batch = 4;
  int64_t queue_capacity = 8;
  std::chrono::milliseconds step_interval{1};
  std::vector<int64_t> script;       // non-empty: every request generates these, cycled
  std::optional<int64_t> eos_after;  // generate eos_token as the token after this many
  int64_t eos_token = 257;
  std::optional<int64_t> error_after;  // end with FinishReason::kError after this many tokens
};

class FakeBackend : public GenerationBackend {
 public:
  explicit FakeBackend(FakeBackendOptions options);
  ~FakeBackend() override;

  bool submit(GenerationRequest request, TokenSink sink) override;
  int64_t context_length() const override { return options_.context_length; }
  int64_t vocab_size() const override { return options_.vocab_size; }
  BackendStats stats() const override;

  std::vector<GenerationRequest> requests() const;  // every request accepted, in order
  int64_t cancelled() const { return cancelled_; }  // requests whose sink returned false
  // Waits (bounded) until nothing is queued or running; false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout) const;

 private:
  struct Active {
    GenerationRequest request;
    TokenSink sink;
    int64_t generated = 0;
  };
  void run();
  // The next event of `a`; sets done when it is the last.
  TokenEvent next_event(Active& a) const;

  FakeBackendOptions options_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::deque<Active> queue_;
  std::vector<Active> running_;
  std::vector<GenerationRequest> accepted_;
  BackendStats totals_;
  std::atomic<int64_t> cancelled_{0};
  int64_t stepping_ = 0;  // requests of the step in progress (out of running_ meanwhile)
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace fabkit::serve::fake
