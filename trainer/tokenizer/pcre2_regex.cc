#define PCRE2_CODE_UNIT_WIDTH 8
#include "trainer/tokenizer/pcre2_regex.h"

#include <pcre2.h>

#include <memory>
#include <optional>

#include "common/errors.h"

namespace fabkit::trainer {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buf), n);
}

size_t char_length(std::string_view s, size_t i) {
  auto b = static_cast<unsigned char>(s[i]);
  return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;  // valid UTF-8 (checked by the caller)
}

bool compiles(const std::string& pattern) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  pcre2_code_free(c);
  return c != nullptr;
}

}  // namespace

std::string onig_scripts_to_pcre2(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size());
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 >= pattern.size()) {
      out += pattern[i];
      continue;
    }
    char kind = pattern[i + 1];
    size_t close = pattern.find('}', i);
    if ((kind == 'p' || kind == 'P') && i + 2 < pattern.size() && pattern[i + 2] == '{' && close != std::string::npos) {
      std::string name = pattern.substr(i + 3, close - i - 3);
      std::string neg = !name.empty() && name[0] == '^' ? "^" : "";
      std::string bare = name.substr(neg.size());
      // Only a name PCRE2 knows as a script is rewritten: categories (L, Nd, ...) stay as they are.
      if (!bare.empty() && bare.find(':') == std::string::npos && bare.find('=') == std::string::npos &&
          compiles("\\p{sc:" + bare + "}")) {
        out += std::string("\\") + kind + "{" + neg + "sc:" + bare + "}";
        i = close;
        continue;
      }
    }
    out += pattern[i];  // any escape: copy the backslash and the escaped character together
    out += pattern[++i];
  }
  return out;
}

Pcre2Regex::Pcre2Regex(const std::string& pattern, bool literal, const std::string& where) : where_(where) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  // PCRE2 refuses UCP beside LITERAL (a literal has no classes for it to change).
  uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  const std::string translated = literal ? pattern : onig_scripts_to_pcre2(pattern);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(), options,
                                   &err, &offset, nullptr);
  if (!code)
    throw UsageError(where + ": the pattern does not compile (" + pcre2_message(err) + " at offset " +
                     std::to_string(offset) + "): " + pattern);
  // The JIT is several times faster; when it is unavailable the interpreter gives the same matches.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  code_ = code;
}

Pcre2Regex::~Pcre2Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

std::vector<std::pair<size_t, size_t>> Pcre2Regex::find_all(std::string_view text) const {
  auto* code = static_cast<pcre2_code*>(code_);
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
  std::vector<std::pair<size_t, size_t>> out;
  size_t from = 0;
  std::optional<size_t> last_match_end;
  while (from <= text.size()) {
    int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), from, PCRE2_NO_UTF_CHECK,
                         md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)  // match or depth limit on a pathological input: never a silent partial split
      throw UsageError(where_ + ": matching failed (" + pcre2_message(rc) + ") on a text of " +
                       std::to_string(text.size()) + " bytes");
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    size_t b = ov[0], e = ov[1];
    if (b == e && last_match_end == e) {
      from = from < text.size() ? from + char_length(text, from) : text.size() + 1;
      continue;
    }
    if (e < b) e = b;  // \K can report an end before the start; treat it as empty
    out.emplace_back(b, e);
    from = e;
    last_match_end = e;
  }
  return out;
}

}  // namespace fabkit::trainer
