#include "common/json_read.h"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <vector>

namespace fabkit {
namespace {

// Thrown from the parser callback to stop at the first container past the limit.
struct TooDeep {};

// A char iterator that records how far the parser has read: nlohmann's SAX interface gives no
// position, and the error should say where the deep part starts.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, const char** read_to) : p_(p), read_to_(read_to) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    *read_to_ = ++p_;
    return *this;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const CountingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  const char** read_to_;
};

// Run only after the DOM parse stopped at the limit (the error path): walks the same text again
// and records the path of keys and indices down to the first container past the limit.
template <typename J>
class DepthProbe : public nlohmann::json_sax<J> {
 public:
  using typename nlohmann::json_sax<J>::number_integer_t;
  using typename nlohmann::json_sax<J>::number_unsigned_t;
  using typename nlohmann::json_sax<J>::number_float_t;
  using typename nlohmann::json_sax<J>::string_t;
  using typename nlohmann::json_sax<J>::binary_t;

  explicit DepthProbe(int max_depth) : max_depth_(static_cast<size_t>(max_depth)) {}

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool key(string_t& k) override {
    levels_.back().key = k;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

  bool exceeded() const { return exceeded_; }

  // ".hosts[0].nccl" style; the middle of a long path is elided.
  std::string path() const {
    std::vector<std::string> parts;
    for (const auto& l : levels_) {
      if (l.array) {
        parts.push_back("[" + std::to_string(l.index) + "]");
      } else {
        std::string k = l.key.size() > 40 ? l.key.substr(0, 40) + "…" : l.key;
        bool plain = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-';
        });
        parts.push_back(plain ? "." + k
                              : "[" + J(k).dump(-1, ' ', false, J::error_handler_t::replace) + "]");
      }
    }
    constexpr size_t kHead = 8, kTail = 2;
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts.size() > kHead + kTail + 1 && i == kHead) {
        out += "…";
        i = parts.size() - kTail - 1;
        continue;
      }
      out += parts[i];
    }
    return out.empty() ? "the top level" : out;
  }

 private:
  struct Level {
    bool array = false;
    size_t index = 0;  // of the element being read, in an array
    string_t key;      // of the member being read, in an object
  };

  bool open(bool array) {
    if (levels_.size() >= max_depth_) {
      exceeded_ = true;
      return false;
    }
    levels_.push_back({array, 0, {}});
    return true;
  }
  bool close() {
    levels_.pop_back();
    return value();
  }
  bool value() {
    if (!levels_.empty() && levels_.back().array) ++levels_.back().index;
    return true;
  }

  size_t max_depth_;
  bool exceeded_ = false;
  std::vector<Level> levels_;
};

template <typename J>
[[noreturn]] void throw_too_deep(std::string_view text, const std::string& source, int max_depth) {
  DepthProbe<J> probe(max_depth);
  const char* read_to = text.data();
  J::sax_parse(CountingIterator(text.data(), &read_to),
               CountingIterator(text.data() + text.size(), &read_to), &probe);
  std::string where;
  if (probe.exceeded()) {
    // The parser stopped right after the bracket that went one level too deep.
    const size_t offset = static_cast<size_t>(read_to - text.data()) - 1;
    const std::string_view before = text.substr(0, offset);
    const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
    const size_t line_start = before.rfind('\n');
    const size_t column = offset - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    where = " at " + probe.path() + " (line " + std::to_string(line) + ", column " +
            std::to_string(column) + ")";
  }
  throw JsonReadError(source,
                      "nested deeper than " + std::to_string(max_depth) + " levels" + where +
                          "; no document fabkit reads is nested that deep (a corrupt or hostile "
                          "file or peer)",
                      true);
}

// nlohmann quotes the token it stopped at, which in a hostile input can be megabytes long.
std::string capped(const std::string& message) {
  constexpr size_t kMaxBytes = 400;
  if (message.size() <= kMaxBytes) return message;
  size_t cut = kMaxBytes;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xc0) == 0x80) --cut;  // UTF-8
  return message.substr(0, cut) + "…";
}

template <typename J>
J parse_with_limit(std::string_view text, const std::string& source, int max_depth) {
  typename J::parser_callback_t limit = [max_depth](int depth, typename J::parse_event_t event,
                                                    J&) {
    // depth counts the containers around this one.
    if (depth >= max_depth &&
        (event == J::parse_event_t::object_start || event == J::parse_event_t::array_start))
      throw TooDeep{};
    return true;
  };
  try {
    return J::parse(text.data(), text.data() + text.size(), limit);
  } catch (const TooDeep&) {
    throw_too_deep<J>(text, source, max_depth);
  } catch (const typename J::exception& e) {  // parse_error; out_of_range for numbers like 6e892
    throw JsonReadError(source, "not valid JSON (" + capped(e.what()) + ")", false);
  }
}

}  // namespace

JsonReadError::JsonReadError(std::string source, std::string detail, bool too_deep)
    : std::runtime_error(source + ": " + detail),
      source_(std::move(source)),
      detail_(std::move(detail)),
      too_deep_(too_deep) {}

Json parse_json(std::string_view text, const std::string& source, int max_depth) {
  return parse_with_limit<Json>(text, source, max_depth);
}

nlohmann::json parse_json_sorted(std::string_view text, const std::string& source, int max_depth) {
  return parse_with_limit<nlohmann::json>(text, source, max_depth);
}

}  // namespace fabkit
