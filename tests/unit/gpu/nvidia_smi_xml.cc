#include "tests/unit/gpu/nvidia_smi_xml.h"

#include <pugixml.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "topo/pci_bus_id.h"

namespace fabkit::testing {
namespace {

std::string text(const pugi::xml_node& n) {
  std::string s = n.child_value();
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t')) s.pop_back();
  size_t b = s.find_first_not_of(" \n\t");
  return b == std::string::npos ? "" : s.substr(b);
}

// "4", "16x" -> the number; "N/A", "" -> nullopt.
std::optional<int> number(const pugi::xml_node& n) {
  std::string s = text(n);
  if (s.empty() || s[0] < '0' || s[0] > '9') return std::nullopt;
  return std::atoi(s.c_str());
}

// A count: digits only ("N/A", "" -> nullopt), wider than int.
std::optional<uint64_t> count(const pugi::xml_node& n) {
  std::string s = text(n);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::strtoull(s.c_str(), nullptr, 10);
}

SmiEccScope ecc_scope(const pugi::xml_node& scope) {
  SmiEccScope e;
  e.sram_corrected = count(scope.child("sram_correctable"));
  e.dram_corrected = count(scope.child("dram_correctable"));
  e.dram_uncorrected = count(scope.child("dram_uncorrectable"));
  if (scope.child("sram_uncorrectable")) {
    e.sram_uncorrected = count(scope.child("sram_uncorrectable"));
  } else {
    auto parity = count(scope.child("sram_uncorrectable_parity"));
    auto secded = count(scope.child("sram_uncorrectable_secded"));
    if (parity && secded) e.sram_uncorrected = *parity + *secded;
  }
  return e;
}

std::optional<bool> yes_no(const pugi::xml_node& n, const char* yes, const char* no) {
  std::string s = text(n);
  if (s == yes) return true;
  if (s == no) return false;
  return std::nullopt;
}

std::optional<std::set<std::string>> reasons(const pugi::xml_node& gpu) {
  for (const char* block : {"clocks_event_reasons", "clocks_throttle_reasons"}) {
    pugi::xml_node r = gpu.child(block);
    if (!r) continue;
    const std::string prefix =
        std::string(block).substr(0, std::strlen(block) - 1) + "_";  // "clocks_event_reason_"
    std::set<std::string> active;
    for (pugi::xml_node c : r.children()) {
      std::string name = c.name();
      if (name.rfind(prefix, 0) != 0) continue;
      name = name.substr(prefix.size());
      // nvidia-smi's older name for applications_clocks_setting.
      if (name == "user_defined_clocks") name = "applications_clocks_setting";
      if (text(c) == "Active") active.insert(name);
    }
    return active;
  }
  return std::nullopt;
}

}  // namespace

std::map<std::string, SmiGpu> parse_nvidia_smi_xml(const std::string& xml) {
  pugi::xml_document doc;
  pugi::xml_parse_result ok = doc.load_string(xml.c_str());
  if (!ok) throw std::invalid_argument(std::string("nvidia-smi -q -x: ") + ok.description());
  pugi::xml_node log = doc.child("nvidia_smi_log");
  if (!log) throw std::invalid_argument("nvidia-smi -q -x: no <nvidia_smi_log>");
  std::map<std::string, SmiGpu> out;
  for (pugi::xml_node gpu : log.children("gpu")) {
    std::string id = gpu.attribute("id").value();
    SmiGpu g;
    g.ecc_enabled = yes_no(gpu.child("ecc_mode").child("current_ecc"), "Enabled", "Disabled");
    g.ecc_volatile = ecc_scope(gpu.child("ecc_errors").child("volatile"));
    g.ecc_aggregate = ecc_scope(gpu.child("ecc_errors").child("aggregate"));
    g.reasons = reasons(gpu);
    pugi::xml_node link = gpu.child("pci").child("pci_gpu_link_info");
    g.pcie_gen_current = number(link.child("pcie_gen").child("current_link_gen"));
    g.pcie_gen_max = number(link.child("pcie_gen").child("max_link_gen"));
    g.pcie_width_current = number(link.child("link_widths").child("current_link_width"));
    g.pcie_width_max = number(link.child("link_widths").child("max_link_width"));
    pugi::xml_node rows = gpu.child("remapped_rows");
    g.remap_known = rows && rows.child("remapped_row_corr");
    if (g.remap_known) {
      g.remap_corrected = number(rows.child("remapped_row_corr"));
      g.remap_uncorrected = number(rows.child("remapped_row_unc"));
      g.remap_pending = yes_no(rows.child("remapped_row_pending"), "Yes", "No");
      g.remap_failure = yes_no(rows.child("remapped_row_failure"), "Yes", "No");
    }
    out[topo::normalize_bus_id(id).value_or(id)] = g;
  }
  return out;
}

}  // namespace fabkit::testing
