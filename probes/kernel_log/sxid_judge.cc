// The finding for one NVSwitch SXid group: its class (sxid_catalog.cc) decides the severity, and
// only an NVSwitch on this node's PCI bus can drain it, as for Xids (kernel_log_judge.cc).
#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/kernel_log/kernel_log_text.h"
#include "probes/kernel_log/sxid.h"

namespace fabkit::probes {
namespace {

std::string links(const std::vector<int>& v) {
  std::string s;
  for (int l : v) s += (s.empty() ? "" : ", ") + std::to_string(l);
  return s;
}

constexpr const char* kDrainFix =
    "drain the node; stop the jobs using the GPUs, reset the NVSwitches and GPUs (nvidia-smi -r, "
    "or reboot the node) and restart nvidia-fabricmanager; check the fabric manager log and "
    "nvidia-smi nvlink -s; if the SXid recurs on the same link, have the baseboard or cable "
    "inspected";
constexpr const char* kDegradedFix =
    "watch the port: nvidia-smi nvlink -e (error counters) and the fabric manager log; if the "
    "count grows, reseat or replace the link at the next maintenance";

}  // namespace

Finding sxid_finding(const KernelLogFacts& f, const SxidGroup& g) {
  const SxidInfo* x = find_sxid(g.sxid);
  const std::string subject = "SXid " + std::to_string(g.sxid) + " " + g.bus_id;
  const std::string who = g.device_name.empty() ? g.device + " (" + g.bus_id + ")"
                                                : g.device_name + " (" + g.device + ")";
  std::string msg = "NVSwitch SXid " + std::to_string(g.sxid) +
                    (x ? std::string(" (") + x->name + ")" : std::string()) + " on " + who + ": " +
                    (g.fatal ? "Fatal, " : "") + kernel_log_span(f, g.count, g.first_s, g.last_s);
  if (!g.links.empty()) msg += "; link(s) " + links(g.links);
  if (g.fatal && x && x->cls != SxidClass::kDrain)
    msg += ". The driver called it fatal";
  else if (x)
    msg += ". " + kernel_log_capitalized(x->meaning);
  if (g.fatal && !x)
    msg +=
        ". A fatal SXid: the GPU partitions on the port fail until the NVSwitches and GPUs are "
        "reset (NVIDIA's Fabric Manager guide)";
  if (const std::string why = kernel_log_not_on_node(f, g.bus_id); !why.empty()) {
    const std::string text = msg + ", but " + why + ". Line: " + g.sample;
    const std::string fix =
        "lspci -d 10de: lists the GPUs and NVSwitches; a line about another bus is a record from "
        "another machine's capture or a forged one: see who wrote it (journalctl -k)";
    return g.cls == SxidClass::kInformational ? info("kernel_log.not_a_gpu", subject, text, fix)
                                              : warn("kernel_log.not_a_gpu", subject, text, fix);
  }
  msg += ". Line: " + g.sample;
  if (g.cls == SxidClass::kDrain) return fail("kernel_log.sxid_drain", subject, msg, kDrainFix);
  if (!x)
    return warn("kernel_log.sxid_unknown", subject,
                msg + ". fabcheck's table does not know this SXid",
                "look it up in NVIDIA's Fabric Manager user guide (NVSwitch SXid errors); "
                "nvidia-smi nvlink -e and the fabric manager log");
  if (g.cls == SxidClass::kInformational)
    return info("kernel_log.sxid_informational", subject, msg);
  return warn("kernel_log.sxid_degraded", subject, msg, kDegradedFix);
}

}  // namespace fabkit::probes
