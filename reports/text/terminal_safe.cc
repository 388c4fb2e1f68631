#include "reports/text/terminal_safe.h"

#include <cstdio>

namespace fabkit::reports::text {
namespace {

// Length of the valid UTF-8 sequence at s[i] and its code point; 0 when the bytes there are not
// one (truncated, overlong, a surrogate, past U+10FFFF).
size_t decode_utf8(std::string_view s, size_t i, unsigned* cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned c = b(0);
  const size_t len = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xe  ? 3
                     : (c >> 3) == 0x1e ? 4
                                        : 0;
  if (len == 0 || i + len > s.size()) return 0;
  unsigned v = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
  for (size_t k = 1; k < len; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    v = (v << 6) | (b(k) & 0x3f);
  }
  const bool valid = len == 1 || (len == 2 && v >= 0x80) ||
                     (len == 3 && v >= 0x800 && (v < 0xd800 || v > 0xdfff)) ||
                     (len == 4 && v >= 0x10000 && v <= 0x10ffff);
  if (!valid) return 0;
  *cp = v;
  return len;
}

bool is_hidden_format(unsigned cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || (cp >= 0x200b && cp <= 0x200f) ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2064) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

}  // namespace

std::string terminal_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    unsigned cp = 0;
    const size_t len = decode_utf8(s, i, &cp);
    if (len == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(s[i]));
      out += buf;
      ++i;
      continue;
    }
    if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
    } else if (is_hidden_format(cp)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace fabkit::reports::text
