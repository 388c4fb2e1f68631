// NVSwitch SXid lines: what the NVSwitch driver reports about the switch fabric of an HGX node,
// "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up", grouped per
// switch and SXid and judged from the line's own "Fatal"/"Non-fatal" and NVIDIA's catalogue
// (sxid_catalog.cc names the sources). Pure.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/finding.h"

namespace fabkit::probes {

struct KernelLogFacts;
struct KernelLogRecord;

enum class SxidClass {
  kDrain,          // fail: the fabric or a GPU behind it needs a reset or a reboot
  kDegraded,       // warn: the link works, with lower throughput (replays, error rates)
  kInformational,  // info: corrected by the hardware, no impact
};
const char* to_string(SxidClass c);  // "drain", "degraded", "informational"

struct SxidInfo {
  int sxid = 0;
  const char* name = "";                 // NVIDIA's: "LTSSM Fault Up"
  const char* meaning = "";              // the impact, with the source
  SxidClass cls = SxidClass::kDegraded;  // when the line does not say "Fatal"
};
// nullptr for an SXid not in the table.
const SxidInfo* find_sxid(int sxid);

// One line of an SXid report, which the driver prints as several records, each starting
// "nvidia-nvswitchN: SXid (PCI:<bus>): <sxid>, ": "Fatal, Link 30 LTSSM Fault Up" or "Non-fatal,
// Link 46 egress non-posted PRIV error (First)" (the report), "Severity 1 Engine instance 30
// Sub-engine instance 00" and "Data {0x50610002, ...}" (its details).
struct SxidLine {
  std::string device;  // "nvidia-nvswitch0"
  std::string bus;     // normalised: "0000:05:00.0"
  int sxid = 0;
  enum class Kind { kFatal, kNonFatal, kDetail } kind = Kind::kDetail;
  std::optional<int> link;  // "Link 30"
  std::string what;         // "LTSSM Fault Up", without "(First)"
};
// Matched from the start of the message (log_lines.h says why); nullopt when it is not one.
std::optional<SxidLine> parse_sxid_line(std::string_view message);

// Every SXid of one number on one NVSwitch.
struct SxidGroup {
  int sxid = 0;
  std::string bus_id;       // the NVSwitch as sysfs names it
  std::string device;       // "nvidia-nvswitch0"
  std::string device_name;  // from the PCIe facts, else ""
  int count = 0;            // reports (Fatal/Non-fatal lines); detail lines alone count as one
  bool fatal = false;       // a line said "Fatal"
  std::vector<int> links;   // distinct, at most 32
  std::optional<double> first_s, last_s;
  std::string what;    // the first report's text: "LTSSM Fault Up"
  std::string sample;  // the first report line (or the first line)
  SxidClass cls = SxidClass::kDegraded;
  bool known = false;  // in the table
};

// Scans the records of facts' window that the kernel printed into facts.sxids.
void scan_sxids(const std::vector<KernelLogRecord>& records,
                const std::map<std::string, std::string>& device_names, KernelLogFacts& facts);
// The finding for one group (a drain only for an NVSwitch on this node's PCI bus).
Finding sxid_finding(const KernelLogFacts& facts, const SxidGroup& group);

}  // namespace fabkit::probes
