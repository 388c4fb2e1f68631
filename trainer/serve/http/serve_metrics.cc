#include "trainer/serve/http/serve_metrics.h"

#include <sstream>

namespace fabkit::serve {

void ServeMetrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
}

void ServeMetrics::count_prompt_tokens(int64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  prompt_tokens_ += static_cast<uint64_t>(n);
}

void ServeMetrics::count_generated_tokens(int64_t n, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  generated_tokens_ += static_cast<uint64_t>(n);
  recent_.emplace_back(now, n);
  drop_old(now);
}

void ServeMetrics::drop_old(Clock::time_point now) const {
  while (!recent_.empty() && now - recent_.front().first > kRateWindow) recent_.pop_front();
}

double ServeMetrics::generated_tokens_per_second(Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mutex_);
  drop_old(now);
  int64_t total = 0;
  for (const auto& r : recent_) total += r.second;
  return static_cast<double>(total) / std::chrono::duration<double>(kRateWindow).count();
}

std::string ServeMetrics::render(const BackendStats& backend, Clock::time_point now) const {
  double rate = generated_tokens_per_second(now);
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostringstream o;
  o << "# HELP fabtrain_serve_requests_total HTTP requests answered, by endpoint and status.\n"
    << "# TYPE fabtrain_serve_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    o << "fabtrain_serve_requests_total{endpoint=\"" << key.first << "\",status=\"" << key.second
      << "\"} " << n << "\n";
  }
  auto metric = [&o](const char* name, const char* type, const char* help, auto value) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n"
      << name << " " << value << "\n";
  };
  metric("fabtrain_serve_prompt_tokens_total", "counter", "Prompt tokens of accepted requests.",
         prompt_tokens_);
  metric("fabtrain_serve_generated_tokens_total", "counter", "Tokens generated for clients.",
         generated_tokens_);
  metric("fabtrain_serve_generated_tokens_per_second", "gauge",
         "Generated tokens per second over the last 10 seconds.", rate);
  metric("fabtrain_serve_queue_depth", "gauge", "Requests waiting for a decode slot.",
         backend.queued);
  metric("fabtrain_serve_queue_capacity", "gauge", "Requests the queue holds before 503.",
         backend.queue_capacity);
  metric("fabtrain_serve_running", "gauge", "Requests in the decode batch.", backend.running);
  metric("fabtrain_serve_max_batch", "gauge", "Requests the decode batch holds.",
         backend.max_batch);
  metric("fabtrain_serve_decode_steps_total", "counter", "Decode steps the backend ran.",
         backend.decode_steps);
  return o.str();
}

}  // namespace fabkit::serve
