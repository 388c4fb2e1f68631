// A compiled regular expression over UTF-8 text with Unicode properties, for the pre-tokenizer
// split patterns of tokenizer.json.
//
// Why PCRE2 and not std::regex or a hand-written matcher: GPT-2's and Llama 3's patterns use
// \p{L}, \p{N}, Unicode \s, (?i:...) and the lookahead (?!\S). std::regex knows neither Unicode
// properties nor UTF-8 (it matches bytes), and a hand-written matcher would have to be one for
// every pattern a model ships. HF tokenizers runs these patterns with Oniguruma, a Perl-style
// backtracking engine; PCRE2 (Debian libpcre2-8) is the same kind of engine and, compiled with
// PCRE2_UTF | PCRE2_UCP, gives \p{..}, \s, \w and case folding their Unicode meanings.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fabkit::trainer {

// The one place the two engines' syntax means different things (measured against tokenizers
// 0.23.3): Oniguruma's \p{Han} is the Script property, PCRE2's (10.40+) is Script_Extensions, so
// "。" (Common script, Han among its extensions) is \p{Han} for PCRE2 only. Every \p{X} / \P{X}
// whose X PCRE2 knows as a script becomes \p{sc:X}; categories such as \p{L} stay as they are.
std::string onig_scripts_to_pcre2(const std::string& pattern);

class Pcre2Regex {
 public:
  // literal: the pattern is a plain string (tokenizer.json's {"String": ...}). UsageError naming
  // `where` (file and field) with PCRE2's message and offset when the pattern does not compile.
  Pcre2Regex(const std::string& pattern, bool literal, const std::string& where);
  ~Pcre2Regex();
  Pcre2Regex(const Pcre2Regex&) = delete;
  Pcre2Regex& operator=(const Pcre2Regex&) = delete;

  // Every match [begin, end) in byte offsets, left to right, with Oniguruma's find_iter rule for
  // empty matches (one right after the previous match's end is skipped by one character).
  // `text` must be valid UTF-8: the caller checks once per input, so each call here skips
  // PCRE2's own check (which would make scanning a long text quadratic).
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  void* code_ = nullptr;  // pcre2_code_8*, kept out of the header
  std::string where_;
};

}  // namespace fabkit::trainer
