// fabtrain serve's model side: a GenerationBackend over a LlamaModel with continuous batching.
//
// One thread runs steps. Each step admits queued requests while the batch has room (prefilling
// their prompts together, each into its own slot of the KV cache, and sampling each first token),
// then runs one decode step for every running sequence at once (the GEMMs and attention batched),
// samples each sequence's next token with its own seeded generator and hands it to its sink.
// Requests join and leave between steps; a finished or cancelled one frees its slot at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "trainer/model/llama.h"
#include "trainer/serve/backend/generation_backend.h"
#include "trainer/serve/engine/kv_cache.h"

namespace fabkit::serve {

struct DecodeEngineOptions {
  int64_t max_batch = 8;        // sequences decoded together
  int64_t queue_capacity = 64;  // requests waiting for a slot; submit() refuses beyond
  int64_t context_length = 0;   // 0 = the model's max_position_embeddings (the most allowed)
};

class DecodeEngine final : public GenerationBackend {
 public:
  // UsageError naming the option when one is out of range. Starts the engine thread.
  DecodeEngine(trainer::LlamaModel model, DecodeEngineOptions options);
  // Stops the thread; every request still queued or running gets kCancelled.
  ~DecodeEngine() override;
  DecodeEngine(const DecodeEngine&) = delete;
  DecodeEngine& operator=(const DecodeEngine&) = delete;

  bool submit(GenerationRequest request, TokenSink sink) override;
  int64_t context_length() const override { return decoder_.context_length(); }
  int64_t vocab_size() const override { return decoder_.vocab_size(); }
  BackendStats stats() const override;

  // Begins shutdown without waiting: submit() refuses from now on, and the engine thread, at its
  // next step boundary, cancels what is queued and running and exits. The destructor joins it.
  void request_stop();

 private:
  struct Sequence {
    GenerationRequest request;
    TokenSink sink;
    SequenceKvCache cache;
    std::mt19937_64 rng;
    int64_t generated = 0;
    int64_t last_token = -1;  // the input of its next decode step
  };

  void run();
  bool stop_requested() const;
  // Takes queued requests into the batch while it has room.
  void admit();
  // Prefills the admitted requests together and sends each its first token.
  void start(std::vector<std::unique_ptr<Sequence>>& admitted);
  void decode_step();
  // Hands one sampled token to the sink and decides whether the sequence goes on.
  bool deliver(Sequence& seq, int64_t token);
  // Ends a sequence without a new token (cancelled, error); the sink is called once, last.
  static void finish_without_token(Sequence& seq, FinishReason reason, const std::string& error);
  static bool call_sink(Sequence& seq, const TokenEvent& event);

  KvDecoder decoder_;
  const DecodeEngineOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Sequence>> queue_;  // guarded by mutex_
  bool stopping_ = false;                        // guarded by mutex_

  std::vector<std::unique_ptr<Sequence>> running_;  // the engine thread's alone
  std::atomic<int64_t> running_count_{0};
  std::atomic<uint64_t> prompt_tokens_{0}, generated_tokens_{0}, decode_steps_{0};
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace fabkit::serve
