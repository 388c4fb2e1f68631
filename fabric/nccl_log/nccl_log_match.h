// Substring tests and the peer token shared by the rule files (nccl_log_classify.cc for NCCL's and
// its plugins' WARN text, nccl_log_classify_torch.cc for PyTorch's). Internal to fabric/nccl_log.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "fabric/nccl_log/nccl_log_classify.h"

namespace fabkit::nccl_log::match {

using sv = std::string_view;

inline bool has(sv s, sv sub) { return s.find(sub) != sv::npos; }

inline char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

// ASCII case-insensitive find, without the locale lookup of std::tolower per character: the rules
// ask it of every WARN line many times.
inline bool has_ci(sv s, sv sub) {
  if (sub.empty()) return true;
  const char lo = lower_ascii(sub[0]);
  const char up = lo >= 'a' && lo <= 'z' ? static_cast<char>(lo - 32) : lo;
  for (size_t i = 0; i + sub.size() <= s.size(); ++i) {
    if (s[i] != lo && s[i] != up) continue;
    size_t k = 1;
    while (k < sub.size() && lower_ascii(s[i + k]) == lower_ascii(sub[k])) ++k;
    if (k == sub.size()) return true;
  }
  return false;
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The first "name<port>" token: NCCL prints peers as address<port>.
inline std::string peer_of(sv msg) {
  for (size_t lt = msg.find('<'); lt != sv::npos; lt = msg.find('<', lt + 1)) {
    size_t i = lt + 1;
    while (i < msg.size() && is_digit(msg[i])) ++i;
    if (i == lt + 1 || i >= msg.size() || msg[i] != '>') continue;
    size_t start = lt;
    while (start > 0 && msg[start - 1] != ' ' && msg[start - 1] != '(') --start;
    if (start == lt) continue;
    return std::string(msg.substr(start, i + 1 - start));
  }
  return {};
}

inline std::optional<ClassifiedMessage> make(const char* kind, sv msg, std::string detail = {}) {
  return ClassifiedMessage{kind, peer_of(msg), std::move(detail)};
}

}  // namespace fabkit::nccl_log::match
