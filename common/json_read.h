// The one way fabkit turns text into JSON: every file, wire frame, child-process line and
// registration it reads goes through parse_json (a test fails on a raw nlohmann parse anywhere
// else, tests/integration/source/check_json_reads.py).
//
// Why a depth limit: nlohmann's parser builds the tree without recursing, but copying, comparing
// and dumping a value recurse once per nesting level, so `[[[[...` a few hundred KiB long
// (~100k levels) overflows the stack wherever the value is next used. The limit is checked while
// parsing (nlohmann's parser callback sees each container's depth), so no value deeper than it
// ever exists in the program.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "common/json.h"

namespace fabkit {

// The deepest document fabkit reads is a pair report holding the agents' node reports (10
// levels); a node report is 9, a profile 5, an HF tokenizer.json 5 (measured on the goldens and
// fixtures). 128 is far above any of them, as serde_json's default is, and far below where
// copying or dumping a value exhausts a stack: between 50k and 100k levels on a main thread's
// 8 MiB at -O2 (measured), much sooner on a smaller thread stack or in a debug build.
inline constexpr int kMaxJsonDepth = 128;

// Text that is not JSON, or JSON nested deeper than the limit. what() is "SOURCE: DETAIL".
class JsonReadError : public std::runtime_error {
 public:
  JsonReadError(std::string source, std::string detail, bool too_deep);
  const std::string& source() const { return source_; }
  // "not valid JSON (<nlohmann's message with line and column>)" or
  // "nested deeper than 128 levels at .a.b[0][0]… (line 1, column 140); ..."
  const std::string& detail() const { return detail_; }
  bool too_deep() const { return too_deep_; }

 private:
  std::string source_;
  std::string detail_;
  bool too_deep_;
};

// Parses text, naming `source` (a file, "FILE:LINE", "response frame payload") in the error.
// Syntax errors and numbers out of double's range ("6e892") are JsonReadError with nlohmann's
// message; so is a container nested deeper than max_depth, with the path to it and its line and
// column. Never returns a discarded value.
Json parse_json(std::string_view text, const std::string& source, int max_depth = kMaxJsonDepth);
// The same for nlohmann::json (objects with sorted keys), which the HF tokenizer reader uses.
nlohmann::json parse_json_sorted(std::string_view text, const std::string& source,
                                 int max_depth = kMaxJsonDepth);

}  // namespace fabkit
