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

}  // namespace

Pcre2Regex::Pcre2Regex(const std::string& pattern, bool literal, const std::string& where) : where_(where) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  uint32_t options = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err,
                                   &offset, nullptr);
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
