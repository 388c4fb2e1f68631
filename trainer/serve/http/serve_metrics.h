// The server's counters, exposed on GET /metrics in Prometheus' text format (version 0.0.4):
// requests by endpoint and status, prompt and generated tokens, the recent generation rate, and
// the backend's queue depth and running requests.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "trainer/serve/backend/generation_backend.h"

namespace fabkit::serve {

class ServeMetrics {
 public:
  using Clock = std::chrono::steady_clock;
  // tokens/s is averaged over this trailing window: long enough to smooth decode-step jitter,
  // short enough to show a stall.
  static constexpr std::chrono::seconds kRateWindow{10};

  void count_request(const std::string& endpoint, int status);
  void count_prompt_tokens(int64_t n);
  void count_generated_tokens(int64_t n, Clock::time_point now = Clock::now());
  double generated_tokens_per_second(Clock::time_point now = Clock::now()) const;
  std::string render(const BackendStats& backend, Clock::time_point now = Clock::now()) const;

 private:
  void drop_old(Clock::time_point now) const;
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0;
  // (second, tokens generated in that second) for the rate window.
  mutable std::deque<std::pair<Clock::time_point, int64_t>> recent_;
};

}  // namespace fabkit::serve
