#include "topo/path_level.h"

#include <iterator>

namespace fabkit::topo {
namespace {

constexpr const char* kNames[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                  "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
static_assert(std::size(kNames) == static_cast<size_t>(PathLevel::kDis) + 1,
              "one name per PathLevel");

}  // namespace

const char* to_string(PathLevel level) {
  auto i = static_cast<size_t>(level);
  return i < std::size(kNames) ? kNames[i] : "UNKNOWN";
}

std::optional<PathLevel> path_level_from_string(const std::string& name) {
  for (size_t i = 0; i < std::size(kNames); ++i)
    if (name == kNames[i]) return static_cast<PathLevel>(i);
  return std::nullopt;
}

}  // namespace fabkit::topo
