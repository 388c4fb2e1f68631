#include "trainer/serve/jinja/unicode.h"

#include <cstdio>
#include <stdexcept>

namespace fabkit::trainer::serve::jinja {

std::u32string utf8_decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0, n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    char32_t cp;
    int len;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      len = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      len = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      len = 4;
    } else {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    if (i + len > n) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    bool ok = true;
    for (int k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string utf8_encode(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

bool py_isspace(char32_t c) {
  // CPython's _PyUnicode_IsWhitespace: bidirectional type WS, B or S, or category Zs.
  switch (c) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool py_isprintable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
  if ((c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF || c == 0x061C) return false;
  if ((c >= 0xD800 && c <= 0xF8FF) || (c >= 0xFFF9 && c <= 0xFFFB)) return false;  // Cs, Co, Cf
  if (c >= 0xF0000) return false;  // supplementary private use planes
  return true;
}

namespace {

// Scripts with cased letters that the tables below do not cover: refuse rather than guess.
bool uncovered_cased_block(char32_t c) {
  return (c >= 0x0180 && c <= 0x02AF) || (c >= 0x0370 && c <= 0x0385) ||
         (c >= 0x03CF && c <= 0x03FF) || (c >= 0x0460 && c <= 0x058F) ||
         (c >= 0x10A0 && c <= 0x10FF) || (c >= 0x13A0 && c <= 0x13FF) ||
         (c >= 0x1C80 && c <= 0x1CBF) || (c >= 0x1D00 && c <= 0x1FFF) ||
         (c >= 0x2100 && c <= 0x218F) || (c >= 0x24B6 && c <= 0x24E9) ||
         (c >= 0x2C00 && c <= 0x2D2F) || (c >= 0xA640 && c <= 0xA69F) ||
         (c >= 0xA720 && c <= 0xA7FF) || (c >= 0xAB30 && c <= 0xABBF) ||
         (c >= 0x10400 && c <= 0x104FF) || (c >= 0x10C80 && c <= 0x10CFF) ||
         (c >= 0x118A0 && c <= 0x118FF) || (c >= 0x16E40 && c <= 0x16E9F) ||
         (c >= 0x1E900 && c <= 0x1E95F);
}

// Simple one-to-one mappings; 0 when c has no other case in the covered scripts.
char32_t upper_of(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c == 0xB5) return 0x39C;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177))
      return (c & 1) ? c - 1 : 0;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? 0 : c - 1;
    return 0;
  }
  if (c >= 0x3B1 && c <= 0x3C9) return c == 0x3C2 ? 0x3A3 : c - 32;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return 0;
}

char32_t lower_of(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x178) return 0xFF;
    if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177))
      return (c & 1) ? 0 : c + 1;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : 0;
    return 0;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return 0;
}

[[noreturn]] void refuse_case(char32_t c) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  throw std::domain_error(std::string("changing the case of ") + buf +
                          " (outside ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic)");
}

}  // namespace

bool py_iscased(char32_t c) {
  if (upper_of(c) || lower_of(c) || c == 0xDF || c == 0x130 || c == 0x149) return true;
  if (c < 0x80) return false;
  if (uncovered_cased_block(c)) refuse_case(c);
  return false;
}

void py_upper(char32_t c, std::u32string& out) {
  if (c == 0xDF) {  // German sharp s: Python's upper() gives "SS"
    out += U"SS";
    return;
  }
  if (c == 0x149) {  // n preceded by apostrophe
    out += U"\u02BCN";
    return;
  }
  if (char32_t u = upper_of(c)) {
    out.push_back(u);
    return;
  }
  if (c >= 0x80 && !lower_of(c) && c != 0x130 && uncovered_cased_block(c)) refuse_case(c);
  out.push_back(c);
}

void py_lower(char32_t c, std::u32string& out) {
  if (c == 0x130) {  // capital I with dot: Python's lower() gives "i" + combining dot above
    out += U"i\u0307";
    return;
  }
  if (char32_t l = lower_of(c)) {
    out.push_back(l);
    return;
  }
  if (c >= 0x80 && !upper_of(c) && c != 0xDF && c != 0x149 && uncovered_cased_block(c))
    refuse_case(c);
  out.push_back(c);
}

// Title case (the first letter of a word in str.title()/capitalize()): upper case except for the
// few letters whose title case differs, e.g. "ß" -> "Ss".
void py_titlecase(char32_t c, std::u32string& out) {
  if (c == 0xDF) {
    out += U"Ss";
    return;
  }
  py_upper(c, out);
}

std::string py_upper(const std::string& s) {
  std::u32string out;
  for (char32_t c : utf8_decode(s)) py_upper(c, out);
  return utf8_encode(out);
}

std::string py_lower(const std::string& s) {
  std::u32string out;
  for (char32_t c : utf8_decode(s)) py_lower(c, out);
  return utf8_encode(out);
}

std::string py_capitalize(const std::string& s) {
  std::u32string in = utf8_decode(s), out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i == 0) {
      py_titlecase(in[i], out);
    } else {
      py_lower(in[i], out);
    }
  }
  return utf8_encode(out);
}

std::string py_title(const std::string& s) {
  std::u32string in = utf8_decode(s), out;
  bool previous_cased = false;
  for (char32_t c : in) {
    bool cased = py_iscased(c);
    if (cased) {
      if (previous_cased) {
        py_lower(c, out);
      } else {
        py_titlecase(c, out);
      }
    } else {
      out.push_back(c);
    }
    previous_cased = cased;
  }
  return utf8_encode(out);
}

}  // namespace fabkit::trainer::serve::jinja
