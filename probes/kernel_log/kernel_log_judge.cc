// Findings for what the kernel log says. Xid severities come from the table (xid_catalog.cc);
// the other events: a GPU off the bus, a fatal AER report, a failed AER recovery and a mlx5
// firmware health failure take the device out (fail); a non-fatal AER report, a mlx5 command
// timeout and a link going down after boot are warnings (the job running then may have failed;
// the device may have recovered), a link flapping within a day a failure (link_flaps.h);
// correctable AER reports are counted and warned about from
// kAerLinesWarn on, like the sysfs AER totals (pcie_judge.cc).
//
// An Xid or off-the-bus line counts toward a drain only when it names a GPU or NVSwitch on this
// node's PCI bus: a line about any other bus is not this node's GPU failing (a record a user
// forged past the other checks, a capture from another machine, a GPU already removed from the
// bus), so it is a warning that names the bus and says no drain follows from it.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <utility>

#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/kernel_log/link_flaps.h"
#include "probes/kernel_log/system_lines.h"

namespace fabkit::probes {
namespace {

constexpr int kAerLinesWarn = 100;

std::string fmt_s(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", s);
  return b;
}

// "at 1234.5 s after boot (2026-11-26T08:00:00Z)"
std::string when(const KernelLogFacts& f, const std::optional<double>& s) {
  if (!s) return "at an unknown time";
  std::string out = "at " + fmt_s(*s) + " s after boot";
  if (f.boot_time_unix_s) {
    std::time_t t = static_cast<std::time_t>(*f.boot_time_unix_s + static_cast<int64_t>(*s));
    std::tm tm{};
    gmtime_r(&t, &tm);
    char b[32];
    std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
    out += std::string(" (") + b + ")";
  }
  return out;
}

std::string span(const KernelLogFacts& f, int count, const std::optional<double>& first,
                 const std::optional<double>& last) {
  std::string times = std::to_string(count) + (count == 1 ? " time, " : " times, ");
  if (count == 1 || first == last) return times + when(f, first);
  return times + "first " + when(f, first) + ", last " + when(f, last);
}

std::string device(const std::string& bus, const std::string& name) {
  return name.empty() ? bus : name;
}

// "the driver found ..." as the start of a sentence.
std::string capitalized(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Why a line about bus is not judged as this node's GPU; "" when it is one.
std::string not_a_gpu(const KernelLogFacts& f, const std::string& bus) {
  auto gpu = on_gpu(f, bus);
  if (gpu && *gpu) return "";
  if (!gpu)
    return "the PCI devices of this node could not be listed, so " + bus +
           " is not known to be a GPU here: not draining on it";
  return bus + " is not a GPU on this node: not draining on it";
}

Finding not_a_gpu_finding(const std::string& subject, const std::string& what,
                          const std::string& why, const std::string& line, bool informational) {
  const std::string msg = what + ", but " + why + ". Line: " + line;
  const std::string fix =
      "lspci -d 10de: lists the GPUs; a line about a bus without one is a record from another "
      "machine's capture, a GPU already gone from the bus (the pcie and gpus sections show "
      "what is there now), or a forged record: see who wrote it (journalctl -k)";
  return informational ? info("kernel_log.not_a_gpu", subject, msg, fix)
                       : warn("kernel_log.not_a_gpu", subject, msg, fix);
}

Finding xid_finding(const KernelLogFacts& f, const XidGroup& g) {
  const XidInfo* x = find_xid(g.xid);
  if (const std::string why = not_a_gpu(f, g.bus_id); !why.empty())
    return not_a_gpu_finding(
        "Xid " + std::to_string(g.xid) + " " + g.bus_id,
        "Xid " + std::to_string(g.xid) + (x ? std::string(" (") + x->name + ")" : "") + " on " +
            g.bus_id + ": " + span(f, g.count, g.first_s, g.last_s),
        why, g.sample, x && (g.cls == XidClass::kInformational || g.cls == XidClass::kApplication));
  const std::string subject = "Xid " + std::to_string(g.xid) + " " + g.bus_id;
  std::string msg = "Xid " + std::to_string(g.xid) + (x ? std::string(" (") + x->name + ")" : "") +
                    " on " + device(g.bus_id, g.device_name) + ": " +
                    span(f, g.count, g.first_s, g.last_s);
  if (!g.processes.empty()) msg += "; processes " + joined(g.processes);
  if (!g.recovery_action.empty()) msg += "; recovery action: " + g.recovery_action;
  if (x) msg += ". " + capitalized(x->meaning);
  msg += ". Line: " + g.sample;
  if (!x)
    return warn("kernel_log.xid_unknown", subject,
                msg + ". fabcheck's table does not know this Xid",
                "look it up in NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors/"
                "analyzing-xid-catalog.html); run dcgmi diag -r 3 if it recurs");
  switch (g.cls) {
    case XidClass::kDrain:
    case XidClass::kByMessage:  // the line did not say: the catalog's fatal case needs a reset
      return fail("kernel_log.xid_drain", subject, msg, x->action);
    case XidClass::kApplication:
      // Azure NHC and imbue ignore these and gpud keeps the node Healthy (xid_catalog.cc): a
      // user's faulting kernel is no reason to warn about the node.
      return info("kernel_log.xid_application", subject, msg, x->action);
    case XidClass::kInformational:
      return info("kernel_log.xid_informational", subject, msg, x->action);
  }
  return info("kernel_log.xid_application", subject, msg, x->action);
}

}  // namespace

std::optional<bool> on_gpu(const KernelLogFacts& f, const std::string& bus) {
  if (!f.gpu_bus_ids) return std::nullopt;
  return std::find(f.gpu_bus_ids->begin(), f.gpu_bus_ids->end(), bus) != f.gpu_bus_ids->end();
}

std::vector<Finding> judge_kernel_log(const KernelLogFacts& f) {
  std::vector<Finding> out;
  if (!f.readable) {
    const std::string msg = "unknown: the kernel log was not read (" + f.unreadable_reason +
                            "), so Xid, AER and NIC events are not checked";
    if (f.unreadable_reason.find(" is absent") != std::string::npos)
      out.push_back(info("kernel_log.not_captured", "kernel log", msg,
                         "capture the log with the tree: dmesg > DIR/dev/kmsg"));
    else
      out.push_back(info("kernel_log.unreadable", "kernel log", msg,
                         "run fabcheck as root (CAP_SYSLOG; the Slurm health check does), or "
                         "sysctl kernel.dmesg_restrict=0"));
    return out;
  }
  if (!f.window_note.empty()) out.push_back(info("kernel_log.window", "kernel log", f.window_note));
  if ((f.first_seq && *f.first_seq > 0) || f.lost_records > 0)
    out.push_back(info("kernel_log.truncated", "kernel log",
                       "the ring buffer no longer holds the first " +
                           std::to_string(f.first_seq.value_or(0)) + " records since boot" +
                           (f.lost_records ? " and " + std::to_string(f.lost_records) +
                                                 " were overwritten while reading"
                                           : std::string()) +
                           ": events before " + when(f, f.first_s) + " are not checked",
                       "journalctl -k -b keeps the whole boot's kernel log; a larger ring buffer: "
                       "log_buf_len=16M on the kernel command line"));
  for (const auto& g : f.xids) out.push_back(xid_finding(f, g));
  for (const auto& g : f.sxids) out.push_back(sxid_finding(f, g));
  for (const auto& e : f.events) {
    const std::string who = device(e.device, e.device_name);
    const std::string seen = span(f, e.count, e.first_s, e.last_s);
    const std::string bits = e.details.empty() ? "" : " (" + joined(e.details) + ")";
    const std::string line = ". Line: " + e.sample;
    if (auto found = system_event_finding(f, e, who, seen)) {
      out.push_back(std::move(*found));
      continue;
    }
    if (e.kind == "gpu_off_bus" && !not_a_gpu(f, e.device).empty())
      out.push_back(not_a_gpu_finding(e.device, "a GPU off the bus at " + e.device + ": " + seen,
                                      not_a_gpu(f, e.device), e.sample, false));
    else if (e.kind == "gpu_off_bus")
      out.push_back(fail("kernel_log.gpu_off_bus", e.device,
                         who + " fell off the bus: " + seen + line,
                         "drain the node and power-cycle it; check for PCIe/AER errors before it "
                         "and reseat the GPU, riser and cables"));
    else if (e.kind == "aer_fatal")
      out.push_back(fail("kernel_log.aer_fatal", e.device,
                         "fatal uncorrectable PCIe errors reported by " + who + bits + ": " + seen +
                             "; the link was reset and the device below may be gone" + line,
                         "drain the node; reseat the card, riser or cable below this port; "
                         "update BIOS and firmware; replace the part if it recurs"));
    else if (e.kind == "aer_recovery_failed")
      out.push_back(fail("kernel_log.aer_recovery_failed", e.device,
                         "the kernel could not recover " + who +
                             " after an uncorrectable PCIe "
                             "error: " +
                             seen + line,
                         "drain the node and power-cycle it; the device below this port is "
                         "unusable until then"));
    else if (e.kind == "aer_nonfatal")
      out.push_back(
          warn("kernel_log.aer_nonfatal", e.device,
               "non-fatal uncorrectable PCIe errors reported by " + who + bits + ": " + seen + line,
               "transactions were lost and the driver recovered; a job running then may "
               "have failed; reseat the card if they recur"));
    else if (e.kind == "aer_correctable")
      out.push_back(
          e.count >= kAerLinesWarn
              ? warn("kernel_log.aer_correctable", e.device,
                     "correctable PCIe errors reported by " + who + bits + ": " + seen +
                         "; at or above fabcheck's threshold of " + std::to_string(kAerLinesWarn) +
                         ": a marginal link" + line,
                     "reseat the card, riser or cable at the next maintenance")
              : info("kernel_log.aer_correctable", e.device,
                     "correctable PCIe errors reported by " + who + bits + ": " + seen + line));
    else if (e.kind == "mlx5_health")
      out.push_back(fail("kernel_log.mlx5_health", e.device,
                         "the NIC firmware of " + who + " failed its health check: " + seen + line,
                         "drain the node; devlink health show; mlxfwreset or a power cycle; "
                         "update the NIC firmware; replace the NIC if it recurs"));
    else if (e.kind == "mlx5_cmd_timeout")
      out.push_back(warn("kernel_log.mlx5_cmd_timeout", e.device,
                         "firmware commands to " + who + " timed out: " + seen +
                             "; RDMA resource creation (QPs, MRs) stalls while this happens" + line,
                         "check the NIC firmware version (mlxfwmanager --query) and devlink health "
                         "show; a power cycle if it persists"));
    else if (e.kind == "link_down") {
      // Counted over time and with the boot left out (link_flaps.h).
      if (auto down = link_down_finding(f, e)) out.push_back(*down);
    }
  }
  int drains = 0;
  for (const auto& g : f.xids)
    drains += (g.cls == XidClass::kDrain || g.cls == XidClass::kByMessage) &&
                      not_a_gpu(f, g.bus_id).empty()
                  ? 1
                  : 0;
  out.push_back(info(
      "kernel_log.read", "kernel log",
      std::to_string(f.records) + " records read from " + f.source + " (" + f.format + ")" +
          (f.since.empty() ? std::string(" since boot")
                           : ", " + std::to_string(f.records_in_window) + " since " + f.since) +
          ": " + std::to_string(f.xids.size()) + " Xid group(s) (" + std::to_string(drains) +
          " needing a drain), " +
          (f.sxids.empty() ? std::string()
                           : std::to_string(f.sxids.size()) + " NVSwitch SXid group(s), ") +
          std::to_string(f.events.size()) + " other event group(s)" +
          (f.user_space_records ? "; " + std::to_string(f.user_space_records) +
                                      " record(s) written by user space, not judged"
                                : std::string())));
  return out;
}

}  // namespace fabkit::probes

namespace fabkit::probes {

std::string kernel_log_when(const KernelLogFacts& f, const std::optional<double>& s) {
  return when(f, s);
}

std::string kernel_log_span(const KernelLogFacts& f, int count, const std::optional<double>& first,
                            const std::optional<double>& last) {
  return span(f, count, first, last);
}

std::string kernel_log_joined(const std::vector<std::string>& parts) { return joined(parts); }

std::string kernel_log_capitalized(std::string s) { return capitalized(std::move(s)); }

std::string kernel_log_not_on_node(const KernelLogFacts& f, const std::string& bus) {
  return not_a_gpu(f, bus);
}

}  // namespace fabkit::probes
