// Text from logs, config files, the environment and interface names is bytes, not UTF-8;
// nlohmann::json throws on invalid UTF-8 at dump() time (type_error 316), which would turn a
// Latin-1 byte in a user's file into "internal error". Replace each invalid byte with U+FFFD.
// Header-only, so any area can use it without linking another.
#pragma once

#include <string>

namespace fabkit {

inline std::string utf8_clean(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool valid = len > 0 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k)
      valid = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (valid && len > 1) {  // reject overlongs and surrogates, as the JSON library does
      unsigned cp = len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
      valid = (len == 2 && cp >= 0x80) || (len == 3 && cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff)) ||
              (len == 4 && cp >= 0x10000 && cp <= 0x10ffff);
    }
    if (valid) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

}  // namespace fabkit
