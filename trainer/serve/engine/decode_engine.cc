#include "trainer/serve/engine/decode_engine.h"

#include <dlfcn.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "common/errors.h"
#include "trainer/serve/engine/sampler.h"

namespace fabkit::serve {
namespace {

int64_t resolve_context_length(const trainer::LlamaModel& model, const DecodeEngineOptions& o) {
  const int64_t model_max = model->config().max_position_embeddings;
  if (o.context_length == 0) return model_max;
  if (o.context_length < 0 || o.context_length > model_max)
    throw UsageError("context_length is " + std::to_string(o.context_length) +
                     "; it must be in [1, " + std::to_string(model_max) +
                     "] (the model's max_position_embeddings), or 0 for that maximum");
  return o.context_length;
}

std::mt19937_64 request_rng(const SamplingParams& params) {
  if (params.seed) return std::mt19937_64(*params.seed);
  std::random_device device;
  return std::mt19937_64((static_cast<uint64_t>(device()) << 32) ^ device());
}

// Why a request cannot run, naming the field and the fix; "" when it can. The HTTP side checks
// these first; the engine checks again so a bad request is an error event, never a crash.
std::string request_error(const GenerationRequest& r, int64_t context_length, int64_t vocab) {
  if (std::string e = sampling_params_error(r.sampling); !e.empty()) return e;
  if (r.max_tokens < 1)
    return "max_tokens is " + std::to_string(r.max_tokens) + "; it must be at least 1";
  if (r.prompt.empty()) return "the prompt is empty; it needs at least one token (e.g. BOS)";
  // Checked here, not only by the prefill, which takes several prompts at once: one bad prompt
  // must end its own request, not its batch's.
  for (size_t i = 0; i < r.prompt.size(); ++i)
    if (r.prompt[i] < 0 || r.prompt[i] >= vocab)
      return "prompt token " + std::to_string(i) + " is " + std::to_string(r.prompt[i]) +
             ", outside the model's vocabulary [0, " + std::to_string(vocab) + ")";
  const auto prompt = static_cast<int64_t>(r.prompt.size());
  if (r.max_tokens > context_length || prompt > context_length - r.max_tokens)
    return "the prompt (" + std::to_string(prompt) + " tokens) plus max_tokens (" +
           std::to_string(r.max_tokens) + ") is more than the context length " +
           std::to_string(context_length) + ": shorten the prompt or lower max_tokens";
  return "";
}

// Every step runs on the engine's thread, whose OpenMP team is not the one of the thread that
// loaded the model. libgomp counts the workers of both teams, and with more of them than cores it
// stops letting idle workers spin (they sleep, and each of the step's ~200 parallel regions then
// wakes them through the kernel): on a 2-core machine an 8-stream decode step took 26 ms with 1
// thread or 2, against 16 ms for HF's generate() running on its only team. Releasing the loading
// thread's workers (OpenMP 5's omp_pause_resource_all, looked up at run time so that a LibTorch
// built with another OpenMP runtime is unaffected) leaves the engine's team alone.
void release_openmp_workers() {
  using Pause = int (*)(int);
  constexpr int kOmpPauseSoft = 1;
  if (auto pause = reinterpret_cast<Pause>(dlsym(RTLD_DEFAULT, "omp_pause_resource_all")))
    pause(kOmpPauseSoft);
}

}  // namespace

DecodeEngine::DecodeEngine(trainer::LlamaModel model, DecodeEngineOptions options)
    : decoder_(model, resolve_context_length(model, options),
               std::max<int64_t>(1, options.max_batch)),
      options_(options) {
  release_openmp_workers();
  if (options_.max_batch < 1)
    throw UsageError("max_batch is " + std::to_string(options_.max_batch) +
                     "; it must be at least 1");
  if (options_.queue_capacity < 1)
    throw UsageError("queue_capacity is " + std::to_string(options_.queue_capacity) +
                     "; it must be at least 1");
  thread_ = std::thread([this] { run(); });
}

DecodeEngine::~DecodeEngine() {
  request_stop();
  if (thread_.joinable()) thread_.join();
}

void DecodeEngine::request_stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
}

bool DecodeEngine::stop_requested() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopping_;
}

bool DecodeEngine::submit(GenerationRequest request, TokenSink sink) {
  FABKIT_ENFORCE(static_cast<bool>(sink), "DecodeEngine::submit: the sink is empty");
  auto seq = std::make_unique<Sequence>();
  seq->request = std::move(request);
  seq->sink = std::move(sink);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || static_cast<int64_t>(queue_.size()) >= options_.queue_capacity) return false;
    queue_.push_back(std::move(seq));
  }
  wake_.notify_one();
  return true;
}

BackendStats DecodeEngine::stats() const {
  BackendStats s;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    s.queued = static_cast<int64_t>(queue_.size());
  }
  s.running = running_count_.load();
  s.queue_capacity = options_.queue_capacity;
  s.max_batch = options_.max_batch;
  s.prompt_tokens = prompt_tokens_.load();
  s.generated_tokens = generated_tokens_.load();
  s.decode_steps = decode_steps_.load();
  return s;
}

void DecodeEngine::run() {
  // ATen's thread settings are per thread under OpenMP: this gives the engine's thread the count
  // set on the loading thread (`--threads`), not OpenMP's default, and MKL's non-dynamic threads.
  at::init_num_threads();
  torch::NoGradGuard no_grad;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !running_.empty(); });
      if (stopping_) break;
    }
    admit();
    // A stop requested while admitting (a sink may block) ends the run before another step.
    if (!running_.empty() && !stop_requested()) decode_step();
  }
  std::deque<std::unique_ptr<Sequence>> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    left.swap(queue_);
  }
  for (auto& seq : running_) finish_without_token(*seq, FinishReason::kCancelled, "");
  running_.clear();
  running_count_ = 0;
  for (auto& seq : left) finish_without_token(*seq, FinishReason::kCancelled, "");
}

void DecodeEngine::admit() {
  // Every request the batch has room for is prefilled in one call: their prompts' tokens go
  // through the GEMMs together.
  std::vector<std::unique_ptr<Sequence>> admitted;
  while (static_cast<int64_t>(running_.size() + admitted.size()) < options_.max_batch) {
    std::unique_ptr<Sequence> seq;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_ || queue_.empty()) break;
      seq = std::move(queue_.front());
      queue_.pop_front();
    }
    if (std::string error = request_error(seq->request, context_length(), vocab_size());
        !error.empty()) {
      finish_without_token(*seq, FinishReason::kError, error);
      continue;
    }
    admitted.push_back(std::move(seq));
  }
  if (!admitted.empty()) start(admitted);
}

void DecodeEngine::start(std::vector<std::unique_ptr<Sequence>>& admitted) {
  std::vector<SequenceKvCache*> caches;
  std::vector<std::vector<int64_t>> prompts;
  for (auto& seq : admitted) {
    caches.push_back(&seq->cache);
    prompts.push_back(seq->request.prompt);
  }
  at::Tensor logits;
  try {
    logits = decoder_.prefill(caches, prompts);
  } catch (const std::exception& e) {
    // The requests were validated, so the model itself failed (out of memory): these requests
    // end with the error, not the engine.
    for (auto& seq : admitted) finish_without_token(*seq, FinishReason::kError, e.what());
    return;
  }
  const int64_t vocab = vocab_size();
  const float* rows = logits.data_ptr<float>();
  for (size_t i = 0; i < admitted.size(); ++i) {
    Sequence& seq = *admitted[i];
    prompt_tokens_ += seq.request.prompt.size();
    seq.rng = request_rng(seq.request.sampling);
    const int64_t token = sample_token(rows + i * vocab, vocab, seq.request.sampling, seq.rng);
    if (deliver(seq, token)) running_.push_back(std::move(admitted[i]));
  }
  running_count_ = static_cast<int64_t>(running_.size());
}

void DecodeEngine::decode_step() {
  std::vector<SequenceKvCache*> caches;
  std::vector<int64_t> tokens;
  for (auto& seq : running_) {
    caches.push_back(&seq->cache);
    tokens.push_back(seq->last_token);
  }
  at::Tensor logits;
  try {
    logits = decoder_.decode(caches, tokens);
  } catch (const std::exception& e) {
    // The step failed for the whole batch (the requests were validated, so the model itself
    // failed, e.g. out of memory): each request ends with the error rather than the server.
    for (auto& seq : running_)
      finish_without_token(*seq, FinishReason::kError,
                           std::string("decode step failed: ") + e.what());
    running_.clear();
    running_count_ = 0;
    return;
  }
  ++decode_steps_;
  const int64_t vocab = vocab_size();
  const float* rows = logits.data_ptr<float>();
  std::vector<std::unique_ptr<Sequence>> still_running;
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& seq = *running_[i];
    const int64_t token = sample_token(rows + i * vocab, vocab, seq.request.sampling, seq.rng);
    if (deliver(seq, token)) still_running.push_back(std::move(running_[i]));
  }
  running_.swap(still_running);
  running_count_ = static_cast<int64_t>(running_.size());
}

bool DecodeEngine::deliver(Sequence& seq, int64_t token) {
  ++seq.generated;
  ++generated_tokens_;
  const auto& stops = seq.request.stop_token_ids;
  FinishReason finish = FinishReason::kNone;
  if (std::find(stops.begin(), stops.end(), token) != stops.end())
    finish = FinishReason::kStop;
  else if (seq.generated >= seq.request.max_tokens)
    finish = FinishReason::kLength;
  TokenEvent event;
  event.token = token;
  event.last = finish != FinishReason::kNone;
  event.finish = finish;
  const bool wants_more = call_sink(seq, event);
  if (event.last || !wants_more) return false;  // false from the sink: cancelled, no more calls
  seq.last_token = token;
  return true;
}

void DecodeEngine::finish_without_token(Sequence& seq, FinishReason reason,
                                        const std::string& error) {
  TokenEvent event;
  event.last = true;
  event.finish = reason;
  event.error = error;
  call_sink(seq, event);
}

bool DecodeEngine::call_sink(Sequence& seq, const TokenEvent& event) {
  // A sink that throws is treated as one that returned false: its request is cancelled and the
  // engine thread, which serves every other request, goes on.
  try {
    return seq.sink(event);
  } catch (...) {
    return false;
  }
}

}  // namespace fabkit::serve
