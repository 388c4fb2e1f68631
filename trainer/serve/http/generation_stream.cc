#include "trainer/serve/http/generation_stream.h"

#include <algorithm>
#include <exception>

#include "trainer/serve/http/api_error.h"

namespace fabkit::serve {

struct GenerationStream::Shared {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<TokenEvent> events;
  bool cancelled = false;
};

GenerationStream::GenerationStream(const trainer::Tokenizer& tokenizer,
                                   std::vector<int64_t> stop_token_ids,
                                   std::vector<std::string> stops)
    : shared_(std::make_shared<Shared>()),
      stop_token_ids_(std::move(stop_token_ids)),
      decoder_(tokenizer),
      stop_(std::move(stops)) {}

GenerationStream::~GenerationStream() { cancel(); }

std::shared_ptr<GenerationStream> GenerationStream::start(GenerationBackend& backend,
                                                          GenerationRequest request,
                                                          const trainer::Tokenizer& tokenizer,
                                                          std::vector<std::string> stops) {
  std::shared_ptr<GenerationStream> stream(
      new GenerationStream(tokenizer, request.stop_token_ids, std::move(stops)));
  std::shared_ptr<Shared> shared = stream->shared_;
  TokenSink sink = [shared](const TokenEvent& event) {
    std::lock_guard<std::mutex> lock(shared->mutex);
    if (shared->cancelled) return false;
    shared->events.push_back(event);
    shared->ready.notify_one();
    return true;
  };
  if (!backend.submit(std::move(request), std::move(sink))) {
    BackendStats s = backend.stats();
    throw ApiError(503,
                   "the server is busy: " + std::to_string(s.queued) +
                       " requests queued (capacity " + std::to_string(s.queue_capacity) +
                       "); retry later",
                   "server_error", "", "queue_full");
  }
  return stream;
}

void GenerationStream::cancel() {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->cancelled = true;
  shared_->events.clear();
}

bool GenerationStream::next(Clock::time_point deadline, TextStep& step) {
  step = TextStep{};
  if (finished_) return false;
  std::deque<TokenEvent> events;
  {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    if (!shared_->ready.wait_until(lock, deadline, [&] { return !shared_->events.empty(); })) {
      return false;
    }
    events.swap(shared_->events);
  }
  for (const TokenEvent& e : events) {
    handle(e, step);
    if (step.finished) break;
  }
  finished_ = step.finished;
  return true;
}

void GenerationStream::handle(const TokenEvent& e, TextStep& step) {
  try {
    if (e.token >= 0) {
      ++completion_tokens_;
      ++step.new_tokens;
      bool is_stop_token = std::find(stop_token_ids_.begin(), stop_token_ids_.end(), e.token) !=
                           stop_token_ids_.end();
      if (!is_stop_token) step.text += stop_.add(decoder_.add(e.token));
      if (stop_.stopped()) {
        step.finished = true;
        step.finish_reason = "stop";
        cancel();
        return;
      }
    }
    if (!e.last) return;
    step.finished = true;
    step.text += stop_.add(decoder_.flush());
    if (stop_.stopped()) {
      step.finish_reason = "stop";
      return;
    }
    step.text += stop_.flush();
    switch (e.finish) {
      case FinishReason::kStop:
        step.finish_reason = "stop";
        break;
      case FinishReason::kLength:
        step.finish_reason = "length";
        break;
      case FinishReason::kCancelled:
        step.error = "the backend cancelled the request";
        break;
      case FinishReason::kError:
        step.error = "generation failed: " + e.error;
        break;
      case FinishReason::kNone:
        step.error = "the backend ended the request without a reason";
        break;
    }
  } catch (const std::exception& ex) {
    // A token the tokenizer cannot decode is the backend's fault, not the client's: end the
    // request with an error rather than the connection.
    step.finished = true;
    step.error = std::string("cannot decode the generated tokens: ") + ex.what();
    cancel();
  }
}

}  // namespace fabkit::serve
