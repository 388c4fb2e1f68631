#include "trainer/serve/http/text_stream.h"

#include <algorithm>

#include "common/utf8_text.h"

namespace fabkit::serve {
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the UTF-8 sequence a lead byte starts; 0 for a byte that cannot start one.
size_t sequence_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

size_t complete_utf8_prefix(const std::string& text) {
  // Only the last (at most 3) bytes can be an unfinished sequence: find the last lead byte.
  size_t n = text.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    auto c = static_cast<unsigned char>(text[n - back]);
    if (is_continuation(c)) continue;
    size_t need = sequence_length(c);
    // An unfinished sequence: a lead byte with fewer continuation bytes after it than it needs.
    return (need > back) ? n - back : n;
  }
  return n;
}

std::string IncrementalDecoder::decode(size_t begin, size_t end) const {
  if (begin >= end) return "";
  return tokenizer_.decode(std::vector<int64_t>(ids_.begin() + begin, ids_.begin() + end));
}

std::string IncrementalDecoder::add(int64_t token) {
  ids_.push_back(token);
  std::string before = decode(prefix_, read_);
  std::string now = decode(prefix_, ids_.size());
  if (now.size() <= before.size() || now.compare(0, before.size(), before) != 0) return "";
  std::string delta = now.substr(before.size());
  if (complete_utf8_prefix(delta) != delta.size() || ends_with(delta, kReplacement)) return "";
  prefix_ = read_;
  read_ = ids_.size();
  return utf8_clean(delta);
}

std::string IncrementalDecoder::flush() {
  std::string before = decode(prefix_, read_);
  std::string now = decode(prefix_, ids_.size());
  prefix_ = read_ = ids_.size();
  if (now.size() <= before.size() || now.compare(0, before.size(), before) != 0) return "";
  return utf8_clean(now.substr(before.size()));
}

std::string StopMatcher::add(const std::string& text) {
  if (stopped_) return "";
  pending_ += text;
  size_t first = std::string::npos;
  for (const auto& stop : stops_) first = std::min(first, pending_.find(stop));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  // Hold back the longest tail of pending_ that a stop string starts with.
  size_t hold = 0;
  for (const auto& stop : stops_) {
    for (size_t len = std::min(stop.size() - 1, pending_.size()); len > hold; --len) {
      if (pending_.compare(pending_.size() - len, len, stop, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return stopped_ ? "" : out;
}

}  // namespace fabkit::serve
