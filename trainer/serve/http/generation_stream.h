// One request's run through the GenerationBackend, as text. The backend calls the sink on its own
// thread; the sink only queues the token, so a slow client never stalls the decode batch. The HTTP
// thread waits on that queue (always with a deadline), turns tokens into text (IncrementalDecoder,
// StopMatcher) and cancels the backend request when a stop string matches or the client is gone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trainer/serve/backend/generation_backend.h"
#include "trainer/serve/http/text_stream.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::serve {

// What one wait produced: text to send (possibly empty) and, at the end, why it ended.
struct TextStep {
  std::string text;
  int64_t new_tokens = 0;  // tokens the backend generated for this step's events
  bool finished = false;
  std::string finish_reason;  // "stop" | "length"; "" with an error
  std::string error;          // the backend's error, when it failed the request
};

class GenerationStream {
 public:
  using Clock = std::chrono::steady_clock;
  // Submits the request; ApiError 503 when the backend's queue is full. stop_token_ids (EOS and
  // the like) end the text without being decoded into it.
  static std::shared_ptr<GenerationStream> start(GenerationBackend& backend,
                                                 GenerationRequest request,
                                                 const trainer::Tokenizer& tokenizer,
                                                 std::vector<std::string> stops);
  ~GenerationStream();

  // Waits until the backend has sent something or `deadline` passes; false when it passed with
  // nothing new (the request still runs). After a finished step, returns false at once.
  bool next(Clock::time_point deadline, TextStep& step);
  // The client went away or the request timed out: the backend's next sink call returns false,
  // freeing its slot. Safe to call more than once, and after the end.
  void cancel();
  int64_t completion_tokens() const { return completion_tokens_; }

 private:
  struct Shared;  // the queue, shared with the sink (which may outlive this object)
  GenerationStream(const trainer::Tokenizer& tokenizer, std::vector<int64_t> stop_token_ids,
                   std::vector<std::string> stops);
  void handle(const TokenEvent& event, TextStep& step);

  std::shared_ptr<Shared> shared_;
  std::vector<int64_t> stop_token_ids_;
  IncrementalDecoder decoder_;
  StopMatcher stop_;
  int64_t completion_tokens_ = 0;
  bool finished_ = false;
};

}  // namespace fabkit::serve
