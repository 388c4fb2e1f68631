#include "trainer/tokenizer/byte_level.h"

#include <array>

namespace fabkit::trainer {
namespace {

struct ByteMap {
  std::array<std::string, 256> chars;
  std::array<int, 0x144> bytes;  // code point -> byte, -1 where none; all chars are < U+0144
};

bool printable_self(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

const ByteMap& byte_map() {
  static const ByteMap m = [] {
    ByteMap r;
    r.bytes.fill(-1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      char32_t cp = printable_self(b) ? char32_t(b) : char32_t(256 + next++);
      r.chars[b].clear();
      append_utf8(r.chars[b], cp);
      r.bytes[cp] = b;
    }
    return r;
  }();
  return m;
}

// Length of the maximal well-formed prefix check (Unicode Table 3-7): on failure returns the
// number of bytes of the ill-formed subpart (>= 1) as a negative value.
int sequence_length(std::string_view s, size_t i) {
  auto b = static_cast<uint8_t>(s[i]);
  if (b < 0x80) return 1;
  int width;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) width = 2;
  else if (b == 0xE0) width = 3, lo = 0xA0;
  else if (b >= 0xE1 && b <= 0xEC) width = 3;
  else if (b == 0xED) width = 3, hi = 0x9F;  // no surrogates
  else if (b >= 0xEE && b <= 0xEF) width = 3;
  else if (b == 0xF0) width = 4, lo = 0x90;
  else if (b >= 0xF1 && b <= 0xF3) width = 4;
  else if (b == 0xF4) width = 4, hi = 0x8F;  // <= U+10FFFF
  else return -1;
  for (int k = 1; k < width; ++k) {
    if (i + k >= s.size()) return -k;
    auto c = static_cast<uint8_t>(s[i + k]);
    uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) return -k;
  }
  return width;
}

}  // namespace

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

const std::string& byte_level_char(uint8_t byte) { return byte_map().chars[byte]; }

std::optional<uint8_t> byte_level_byte(char32_t cp) {
  if (cp >= byte_map().bytes.size() || byte_map().bytes[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(byte_map().bytes[cp]);
}

std::string to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += byte_map().chars[static_cast<uint8_t>(c)];
  return out;
}

std::optional<char32_t> next_code_point(std::string_view s, size_t& i) {
  int n = sequence_length(s, i);
  if (n < 0) return std::nullopt;
  auto b = static_cast<uint8_t>(s[i]);
  char32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
  for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

size_t first_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    int n = sequence_length(s, i);
    if (n < 0) return i;
    i += n;
  }
  return s.size();
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    int n = sequence_length(bytes, i);
    if (n > 0) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += -n;
    }
  }
  return out;
}

bool is_unicode_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

}  // namespace fabkit::trainer
