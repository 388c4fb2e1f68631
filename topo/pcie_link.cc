#include "topo/pcie_link.h"

#include <charconv>
#include <cmath>

namespace fabkit::topo {
namespace {

struct Generation {
  int number;
  double rate_gts;
  double encoding;  // data bits per transferred bit
};
// PCI-SIG base specifications 1.0a–6.0: rates and line codes.
constexpr Generation kGenerations[] = {
    {1, 2.5, 8.0 / 10.0},     {2, 5.0, 8.0 / 10.0},     {3, 8.0, 128.0 / 130.0},
    {4, 16.0, 128.0 / 130.0}, {5, 32.0, 128.0 / 130.0}, {6, 64.0, 242.0 / 256.0},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<int> pcie_generation_from_speed(std::string_view text) {
  text = trim(text);
  // The number ends at the first blank; "GT/s" must follow (a "GB/s" figure is bandwidth, not
  // a rate, and hwloc writes that).
  size_t blank = text.find(' ');
  if (blank == std::string_view::npos) return std::nullopt;
  std::string_view number = text.substr(0, blank), unit = trim(text.substr(blank));
  if (unit.substr(0, 4) != "GT/s") return std::nullopt;
  if (number.empty() || number.size() > 8) return std::nullopt;
  if (number.front() < '0' || number.front() > '9') return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size()) return std::nullopt;
  for (const auto& g : kGenerations)
    if (std::fabs(g.rate_gts - value) < 1e-6) return g.number;
  return std::nullopt;
}

std::optional<int> pcie_width_from_text(std::string_view text) {
  text = trim(text);
  if (!text.empty() && (text.front() == 'x' || text.front() == 'X')) text.remove_prefix(1);
  int lanes = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), lanes);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  switch (lanes) {
    case 1:
    case 2:
    case 4:
    case 8:
    case 12:
    case 16:
    case 32:
      return lanes;
    default:
      return std::nullopt;
  }
}

double pcie_transfer_rate_gts(int generation) {
  for (const auto& g : kGenerations)
    if (g.number == generation) return g.rate_gts;
  return 0;
}

double pcie_data_rate_gbps(int generation, int width) {
  if (width <= 0) return 0;
  for (const auto& g : kGenerations)
    if (g.number == generation) return g.rate_gts * g.encoding * width;
  return 0;
}

std::string to_string(const PcieLink& link) {
  return "Gen" + (link.generation ? std::to_string(*link.generation) : std::string("?")) + " x" +
         (link.width ? std::to_string(*link.width) : std::string("?"));
}

}  // namespace fabkit::topo
