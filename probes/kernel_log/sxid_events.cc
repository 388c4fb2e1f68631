// NVSwitch SXid lines, as the NVSwitch driver prints them (open-gpu-kernel-modules
// src/common/nvswitch: NVSWITCH_PRINT_SXID), one record per line:
//   nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002b, 0x0000002b, ...}
//   nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ
//   interrupt nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine instance 44
//   Sub-engine ...
// (NVIDIA/nvtrust#124), "…: 20034, Fatal, Link 30 LTSSM Fault Up" (leptonai/gpud's tests) and
// "…: 12028, Non-fatal, Link 61 egress non-posted PRIV error (First)" (imbue's). The
// Fatal/Non-fatal line is the report; Data and Severity lines are its details. Matched from the
// start of the record: "nvidia-nvswitch", a number, ": SXid (PCI:" and a bus id are longer than
// a process name can make them (log_lines.h).
#include <algorithm>
#include <cctype>

#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/kernel_log/log_lines.h"
#include "probes/kernel_log/sxid.h"

namespace fabkit::probes {
namespace {

using sv = std::string_view;

bool starts(sv s, sv prefix) { return s.substr(0, prefix.size()) == prefix; }

size_t digits_at(sv s, size_t at) {
  size_t end = at;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
  return end - at;
}

std::string first_line(const std::string& m, size_t max = 300) {
  std::string l = m.substr(0, m.find('\n'));
  if (l.size() <= max) return l;
  size_t cut = max - 3;
  while (cut > 0 && (static_cast<unsigned char>(l[cut]) & 0xc0) == 0x80) --cut;
  return l.substr(0, cut) + "...";
}

}  // namespace

std::optional<SxidLine> parse_sxid_line(sv m) {
  m = m.substr(0, m.find('\n'));
  constexpr sv kDevice = "nvidia-nvswitch";
  if (!starts(m, kDevice)) return std::nullopt;
  const size_t n = digits_at(m, kDevice.size());
  if (n == 0 || n > 3) return std::nullopt;
  const size_t dev_end = kDevice.size() + n;
  constexpr sv kSxid = ": SXid (PCI:";
  if (m.substr(dev_end, kSxid.size()) != kSxid) return std::nullopt;
  const size_t bus_at = dev_end + kSxid.size();
  const size_t close = m.find(')', bus_at);
  if (close == sv::npos || m.substr(close, 3) != "): ") return std::nullopt;
  auto bus = log_bus_id(m.substr(bus_at, close - bus_at));
  if (!bus) return std::nullopt;
  const size_t code_at = close + 3;
  const size_t code_len = digits_at(m, code_at);
  if (code_len == 0 || code_len > 6 || m.substr(code_at + code_len, 2) != ", ") return std::nullopt;
  SxidLine l;
  l.device = std::string(m.substr(0, dev_end));
  l.bus = *bus;
  l.sxid = std::stoi(std::string(m.substr(code_at, code_len)));
  sv rest = m.substr(code_at + code_len + 2);
  if (starts(rest, "Fatal, ")) {
    l.kind = SxidLine::Kind::kFatal;
    rest.remove_prefix(7);
  } else if (starts(rest, "Non-fatal, ")) {
    l.kind = SxidLine::Kind::kNonFatal;
    rest.remove_prefix(11);
  } else {
    return l;  // "Data {...}", "Severity 1 Engine instance ...": details of the report
  }
  if (starts(rest, "Link ")) {
    const size_t len = digits_at(rest, 5);
    if (len > 0 && len <= 3) {
      l.link = std::stoi(std::string(rest.substr(5, len)));
      rest.remove_prefix(5 + len);
      if (starts(rest, " ")) rest.remove_prefix(1);
    }
  }
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\r')) rest.remove_suffix(1);
  constexpr sv kFirst = " (First)";
  if (rest.size() >= kFirst.size() && rest.substr(rest.size() - kFirst.size()) == kFirst)
    rest.remove_suffix(kFirst.size());
  l.what = std::string(rest);
  return l;
}

void scan_sxids(const std::vector<KernelLogRecord>& records,
                const std::map<std::string, std::string>& names, KernelLogFacts& f) {
  std::map<std::pair<int, std::string>, size_t> index;
  std::vector<bool> reported;  // per group: a Fatal/Non-fatal line was seen
  for (const auto& r : records) {
    // The same window and origin as every other event (log_events.cc): a record user space wrote
    // is never judged.
    if (f.since_boot_s && r.time_s && *r.time_s < *f.since_boot_s) continue;
    if (r.facility && *r.facility != 0) continue;
    auto l = parse_sxid_line(r.message);
    if (!l) continue;
    auto key = std::make_pair(l->sxid, l->bus);
    auto it = index.find(key);
    if (it == index.end()) {
      SxidGroup g;
      g.sxid = l->sxid;
      g.bus_id = l->bus;
      g.device = l->device;
      auto n = names.find(l->bus);
      g.device_name = n == names.end() ? "" : n->second;
      g.sample = first_line(r.message);
      const SxidInfo* info = find_sxid(l->sxid);
      g.known = info != nullptr;
      g.cls = info ? info->cls : SxidClass::kDegraded;
      f.sxids.push_back(g);
      reported.push_back(false);
      it = index.emplace(key, f.sxids.size() - 1).first;
    }
    SxidGroup& g = f.sxids[it->second];
    if (r.time_s) {
      if (!g.first_s || *r.time_s < *g.first_s) g.first_s = r.time_s;
      if (!g.last_s || *r.time_s > *g.last_s) g.last_s = r.time_s;
    }
    if (l->kind == SxidLine::Kind::kDetail) {
      if (g.count == 0) g.count = 1;  // details alone still say the SXid happened
      continue;
    }
    if (!reported[it->second]) {
      reported[it->second] = true;
      g.count = 0;
      g.sample = first_line(r.message);
      g.what = l->what;
    }
    ++g.count;
    if (l->kind == SxidLine::Kind::kFatal) {
      g.fatal = true;
      g.cls = SxidClass::kDrain;
    }
    if (l->link && g.links.size() < 32 &&
        std::find(g.links.begin(), g.links.end(), *l->link) == g.links.end())
      g.links.push_back(*l->link);
  }
  for (auto& g : f.sxids) std::sort(g.links.begin(), g.links.end());
}

}  // namespace fabkit::probes
