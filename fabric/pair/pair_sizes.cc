// The all-reduce message sizes of `fabcheck pair`: the nccl-tests default sweep and --sizes.
#include <cctype>

#include "common/errors.h"
#include "fabric/pair/pair_controller.h"

namespace fabkit::pair {

std::vector<uint64_t> default_pair_sizes() {
  std::vector<uint64_t> out;
  for (uint64_t s = 8; s <= (256ull << 20); s *= 4) out.push_back(s);
  // 8·4^k skips 256 MiB (128 MiB, then 512 MiB); nccl-tests' -e 256M ends the sweep there.
  out.push_back(256ull << 20);
  return out;
}

std::vector<uint64_t> parse_sizes(const std::string& text) {
  std::vector<uint64_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    std::string item =
        text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    uint64_t mult = 1;
    std::string digits = item;
    if (!item.empty()) {
      char u = static_cast<char>(std::toupper(static_cast<unsigned char>(item.back())));
      if (u == 'K' || u == 'M' || u == 'G') {
        mult = u == 'K' ? 1ull << 10 : u == 'M' ? 1ull << 20 : 1ull << 30;
        digits.pop_back();
      }
    }
    bool ok = !digits.empty() && digits.size() <= 10 &&
              digits.find_first_not_of("0123456789") == std::string::npos;
    uint64_t v = ok ? std::stoull(digits) * mult : 0;
    if (!ok || v < 4 || v > (4ull << 30))
      throw UsageError("--sizes '" + text + "': item '" + item +
                       "' must be a byte count from 4 to 4G with an optional K, M or G suffix, "
                       "e.g. --sizes 8,1K,1M,64M");
    out.push_back(v);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace fabkit::pair
