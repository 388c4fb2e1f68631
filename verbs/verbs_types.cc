#include "verbs/verbs_types.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>

namespace fabkit::verbs {

std::optional<Gid> parse_gid(const std::string& text) {
  Gid g{};
  if (inet_pton(AF_INET6, text.c_str(), g.data()) != 1) return std::nullopt;
  return g;
}

std::string format_gid(const Gid& g) {
  char buf[40];
  for (int i = 0; i < 8; ++i)
    snprintf(buf + i * 5, sizeof buf - i * 5, "%02x%02x%s", g[2 * i], g[2 * i + 1], i < 7 ? ":" : "");
  return buf;
}

bool is_zero(const Gid& g) {
  for (auto b : g)
    if (b) return false;
  return true;
}

bool is_ipv4_mapped(const Gid& g) {
  for (int i = 0; i < 10; ++i)
    if (g[i]) return false;
  return g[10] == 0xff && g[11] == 0xff;
}

std::string ipv4_of(const Gid& g) {
  if (!is_ipv4_mapped(g)) return {};
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, g.data() + 12, buf, sizeof buf);
  return buf;
}

std::string format_guid(uint64_t guid_be) {
  uint8_t b[8];
  std::memcpy(b, &guid_be, 8);  // network order: b[0] is the most significant byte
  char buf[24];
  snprintf(buf, sizeof buf, "%02x%02x:%02x%02x:%02x%02x:%02x%02x", b[0], b[1], b[2], b[3], b[4],
           b[5], b[6], b[7]);
  return buf;
}

}  // namespace fabkit::verbs

namespace fabkit::verbs {

std::optional<int> preferred_roce_v2_gid(const std::vector<GidEntry>& gids) {
  std::optional<int> any_v2;
  for (const auto& g : gids) {
    if (g.type != GidType::kRoceV2 || is_zero(g.gid)) continue;
    if (is_ipv4_mapped(g.gid)) return g.index;
    if (!any_v2) any_v2 = g.index;
  }
  return any_v2;
}

}  // namespace fabkit::verbs
