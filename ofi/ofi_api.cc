#include "ofi/ofi_api.h"

#include <algorithm>
#include <cctype>

namespace fabkit::ofi {

bool OfiProvider::has_cap(const std::string& cap) const {
  return std::find(caps.begin(), caps.end(), cap) != caps.end();
}

std::string version_text(uint32_t v) {
  return std::to_string(v >> 16) + "." + std::to_string(v & 0xffff);
}

std::optional<std::pair<int, int>> parse_major_minor(const std::string& text) {
  size_t i = 0;
  auto number = [&](int* out) {
    size_t start = i;
    long v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - start < 6)
      v = v * 10 + (text[i++] - '0');
    *out = static_cast<int>(v);
    return i > start;
  };
  int major = 0, minor = 0;
  if (!number(&major) || i >= text.size() || text[i] != '.') return std::nullopt;
  ++i;
  if (!number(&minor)) return std::nullopt;
  return std::make_pair(major, minor);
}

}  // namespace fabkit::ofi
