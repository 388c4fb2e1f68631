// The kernel's own reports of a node in trouble, beyond the GPU, PCIe and link lines of
// log_lines.h: an NVLink that failed to train, a hung task, soft and hard lockups, RCU stalls, a
// panic, the OOM killer, machine checks, and a mlx5 NIC's module and slot-power events. Pure;
// used by log_events.cc.
//
// Each is matched from the first byte of a record's message, as log_lines.h says why: every
// grammar below is longer than a comm (at most 15 bytes) before its first byte a user chooses,
// so a segfault report quoting a file name cannot complete one.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/finding.h"
#include "probes/kernel_log/kernel_log_facts.h"

namespace fabkit::probes {

struct SystemLine {
  // "nvlink_training_failed", "hung_task", "soft_lockup", "hard_lockup", "rcu_stall",
  // "kernel_panic", "oom_kill", "oom_kill_cgroup", "mce_uncorrected", "mce_corrected",
  // "mce_logged", "mce_context" (an MCE panic's "Machine check: ..." reason, which belongs to
  // the exception above it), "mlx5_module_error", "mlx5_slot_power",
  // "mlx5_slot_power_unadvertised".
  std::string kind;
  // What the event is grouped by: the bus id a device line names, the process a hung task,
  // lockup or OOM kill names, "CPU 3" for a hard lockup; "" for what is the node's (an RCU
  // stall, a panic, a machine check, an NVLink line that names no GPU).
  std::string device;
  std::string detail;  // "CPU#0 stuck for 27s", "Bank 6", "High Temperature", "27W"
  long pid = -1;       // oom_kill*: the process killed, to tell one kill's two lines
};

std::optional<SystemLine> parse_system_line(std::string_view message);

// The finding for a group of such events (system_events_judge.cc); nullopt when e.kind is not
// one of them. who: the device as the findings name it; seen: "3 times, first at ...".
std::optional<Finding> system_event_finding(const KernelLogFacts& f, const LogEventGroup& e,
                                            const std::string& who, const std::string& seen);

}  // namespace fabkit::probes
