// Small scanners over a string_view, shared by the line splitter (nccl_log_line.cc) and the
// time readers (nccl_log_time.cc). Internal to fabric/nccl_log.
#pragma once

#include <cctype>
#include <string_view>

namespace fabkit::nccl_log::scan {

using sv = std::string_view;

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

inline void skip_spaces(sv& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
}

// Reads up to `max` digits; false when there is none.
inline bool read_int(sv& s, long* v, size_t max = 18) {
  size_t i = 0;
  long x = 0;
  while (i < s.size() && i < max && is_digit(s[i])) x = x * 10 + (s[i++] - '0');
  if (i == 0) return false;
  *v = x;
  s.remove_prefix(i);
  return true;
}

inline bool eat(sv& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

inline bool starts_with(sv s, sv p) { return s.substr(0, p.size()) == p; }

inline bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

inline bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

}  // namespace fabkit::nccl_log::scan
