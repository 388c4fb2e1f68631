#include "topo/pci_bus_id.h"

#include <cctype>
#include <cstdio>

#include "common/file_reader.h"

namespace fabkit::topo {
namespace {

std::optional<uint32_t> hex_field(const std::string& s, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    int d = std::isdigit(static_cast<unsigned char>(c))
                ? c - '0'
                : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    v = v * 16 + static_cast<uint32_t>(d);
  }
  return v;
}

}  // namespace

std::optional<PciAddress> parse_pci_address(const std::string& text) {
  std::string t = trim(text);
  auto dot = t.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  auto parts = split(t.substr(0, dot), ':');
  if (parts.size() != 2 && parts.size() != 3) return std::nullopt;
  PciAddress a;
  size_t i = 0;
  if (parts.size() == 3) {
    auto d = hex_field(parts[0], 8);
    if (!d || *d > 0xffff) return std::nullopt;
    a.domain = *d;
    i = 1;
  }
  auto bus = hex_field(parts[i], 2);
  auto dev = hex_field(parts[i + 1], 2);
  auto fn = hex_field(t.substr(dot + 1), 1);
  if (!bus || !dev || *dev > 0x1f || !fn || *fn > 7) return std::nullopt;
  a.bus = *bus;
  a.device = *dev;
  a.function = *fn;
  return a;
}

std::string format_pci_address(const PciAddress& a) {
  char buf[32];
  snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", a.domain, a.bus, a.device, a.function);
  return buf;
}

std::optional<std::string> normalize_bus_id(const std::string& text) {
  auto a = parse_pci_address(text);
  if (!a) return std::nullopt;
  return format_pci_address(*a);
}

}  // namespace fabkit::topo
