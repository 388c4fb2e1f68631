#include "common/human_bytes.h"

#include <cstdio>

namespace fabkit {

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  snprintf(buf, sizeof buf, v == static_cast<uint64_t>(v) ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace fabkit
