// Server-sent events, read incrementally as the bytes arrive: the client half of `fabtrain chat`
// (the server's streamed completions are `data: {json}` events ending with `data: [DONE]`).
// Follows the WHATWG EventSource parsing rules: lines end in CRLF, LF or CR (a CRLF split across
// two reads is one line end); `field: value` with one optional space after the colon; several
// `data` lines join with "\n"; a line starting with ':' is a comment; a blank line dispatches the
// event, and an event with no data is dropped. Written here because no packaged C++ library
// parses SSE (cpp-httplib sends it but only hands a client the raw body bytes).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace fabkit::serve {

struct SseEvent {
  std::string event = "message";  // the `event` field, "message" when absent
  std::string data;
  std::string id;
};

class SseReader {
 public:
  // A line or an event's data longer than this is an error, not a memory hog: a completion
  // chunk is a few hundred bytes.
  static constexpr size_t kMaxBytes = 1 << 20;

  // Feeds the next bytes; calls on_event for each event they complete. Throws std::runtime_error
  // naming the limit when a line or an event's data grows past kMaxBytes.
  void feed(std::string_view bytes, const std::function<void(const SseEvent&)>& on_event);
  // True when bytes of an unfinished line or event are waiting (the stream ended mid-event).
  bool pending() const { return !line_.empty() || has_data_; }

 private:
  void line_done(const std::function<void(const SseEvent&)>& on_event);

  std::string line_;
  bool last_was_cr_ = false;  // a '\n' right after '\r' ends no second line
  SseEvent event_;
  bool has_data_ = false;
};

}  // namespace fabkit::serve
