#include "trainer/serve/client/sse_reader.h"

#include <stdexcept>

namespace fabkit::serve {

void SseReader::feed(std::string_view bytes,
                     const std::function<void(const SseEvent&)>& on_event) {
  for (char c : bytes) {
    if (c == '\n' && last_was_cr_) {
      last_was_cr_ = false;
      continue;
    }
    last_was_cr_ = c == '\r';
    if (c == '\r' || c == '\n') {
      line_done(on_event);
      continue;
    }
    if (line_.size() >= kMaxBytes) {
      throw std::runtime_error("server-sent event line longer than " +
                               std::to_string(kMaxBytes) + " bytes");
    }
    line_.push_back(c);
  }
}

void SseReader::line_done(const std::function<void(const SseEvent&)>& on_event) {
  std::string line;
  line.swap(line_);
  if (line.empty()) {  // dispatch
    if (has_data_) on_event(event_);
    event_ = SseEvent{};
    has_data_ = false;
    return;
  }
  if (line[0] == ':') return;  // comment (servers send them as keep-alives)
  const size_t colon = line.find(':');
  std::string field = line.substr(0, colon);
  std::string value;
  if (colon != std::string::npos) {
    size_t start = colon + 1;
    if (start < line.size() && line[start] == ' ') ++start;
    value = line.substr(start);
  }
  if (field == "data") {
    if (has_data_) event_.data.push_back('\n');
    if (event_.data.size() + value.size() > kMaxBytes) {
      throw std::runtime_error("server-sent event data longer than " + std::to_string(kMaxBytes) +
                               " bytes");
    }
    event_.data += value;
    has_data_ = true;
  } else if (field == "event") {
    event_.event = value;
  } else if (field == "id") {
    event_.id = value;
  }
  // `retry` and unknown fields are ignored, as the spec says.
}

}  // namespace fabkit::serve
