// A TokenSink that records what the engine sends, for the engine's tests: the tokens, the final
// event, and any call after it (which the engine must never make).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trainer/serve/backend/generation_backend.h"

namespace fabkit::serve::testing {

struct Collected {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int64_t> tokens;
  int64_t calls = 0;
  bool done = false;
  int64_t calls_after_done = 0;
  TokenEvent last;

  // Waits for the final event; false after `timeout` (a generous bound: a hang, not slowness).
  bool wait_done(std::chrono::seconds timeout = std::chrono::seconds(120)) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return done; });
  }
  bool wait_calls(int64_t n, std::chrono::seconds timeout = std::chrono::seconds(120)) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, timeout, [&] { return calls >= n; });
  }
  std::vector<int64_t> snapshot() {
    std::lock_guard<std::mutex> lock(mutex);
    return tokens;
  }
};

// on_token(n) runs on the engine thread after the n-th call (1-based) is recorded; its result is
// the sink's (false cancels the request).
inline TokenSink collect(std::shared_ptr<Collected> c,
                         std::function<bool(int64_t)> on_token = nullptr) {
  return [c, on_token](const TokenEvent& e) {
    int64_t n;
    {
      std::lock_guard<std::mutex> lock(c->mutex);
      if (c->done) ++c->calls_after_done;
      n = ++c->calls;
      if (e.token >= 0) c->tokens.push_back(e.token);
      if (e.last) {
        c->done = true;
        c->last = e;
      }
    }
    c->changed.notify_all();
    return on_token ? on_token(n) : true;
  };
}

}  // namespace fabkit::serve::testing
