// The line formats, with where they come from (tests/fixtures/kernel_log/README.md lists the real
// lines):
//  NVLink training: "NVRM: knvlinkUpdatePostRxDetectLinkMask_IMPL: Failed to update Rx Detect
//    Link mask!" and "NVRM: knvlinkDiscoverPostRxDetLinks_IMPL: Getting peer0's
//    postRxDetLinkMask failed!" (the two gpud's nvlink component reads), optionally after the
//    driver's "GPU 0000:18:00.0: " prefix.
//  Hung task (kernel/hung_task.c): "INFO: task kworker/2:1:5747 blocked for more than 120
//    seconds." (the comm may itself hold a colon: the pid is after the last one).
//  Soft lockup (kernel/watchdog.c): "watchdog: BUG: soft lockup - CPU#0 stuck for 27s!
//    [cuda-EvtHandlr:2255424]"; 4.x kernels say "NMI watchdog: ", older ones nothing.
//  Hard lockup (kernel/watchdog_perf.c, watchdog.c): "NMI watchdog: Watchdog detected hard
//    LOCKUP on cpu 79", newer "watchdog: Watchdog detected hard LOCKUP on cpu 5".
//  RCU stall (kernel/rcu/tree_stall.h): "rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
//    "rcu: INFO: rcu_preempt self-detected stall on CPU", "... detected expedited stalls ...";
//    3.x kernels "INFO: rcu_sched_state detected stall on CPU 0 (t=105060 jiffies)".
//  Panic (kernel/panic.c): "Kernel panic - not syncing: Fatal machine check".
//  OOM killer (mm/oom_kill.c): "Out of memory: Killed process 698405 (python) total-vm:...",
//    "Memory cgroup out of memory: Killed process ...", before 4.19 "... Kill process N (name)
//    score S or sacrifice child" then "Killed process N (name) ...", and since 4.19 an
//    "oom-kill:constraint=CONSTRAINT_NONE,...,task=python,pid=698405,uid=1000" line first.
//  Machine checks (arch/x86/kernel/cpu/mce/core.c, __print_mce): "mce: [Hardware Error]: CPU 2:
//    Machine Check: 0 Bank 6: cc59dec000041152" (" Exception" after "Check" when the CPU took
//    it as an exception), "Machine check events logged", and mce_panic's "Machine check:
//    Processor context corrupt".
//  mlx5 (drivers/net/ethernet/mellanox/mlx5/core/events.c): "mlx5_core 0000:5c:00.0:
//    mlx5_port_module_event:1131:(pid 0): Port module event[error]: module 0, Cable error, High
//    Temperature"; mlx5_pcie_event's "Detected insufficient power on the PCIe slot (27W).",
//    "PCIe slot power capability was not advertised." (and "PCIe slot advertised sufficient
//    power (75W).", which is no event).
#include "probes/kernel_log/system_lines.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "probes/kernel_log/log_lines.h"

namespace fabkit::probes {
namespace {

using sv = std::string_view;

bool starts(sv s, sv prefix) { return s.substr(0, prefix.size()) == prefix; }

bool skip(sv& s, sv prefix) {
  if (!starts(s, prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

sv trim_right(sv s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool digits(sv s) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// The digits at the start of s, removed from it; "" when there are none.
sv take_digits(sv& s) {
  size_t n = 0;
  while (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
  sv d = s.substr(0, n);
  s.remove_prefix(n);
  return d;
}

bool identifier(sv s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// "comm:pid" as hung_task and the soft-lockup report print it; the comm is what precedes the
// last colon.
std::optional<std::pair<std::string, long>> comm_pid(sv s) {
  const size_t colon = s.rfind(':');
  if (colon == sv::npos || colon == 0 || !digits(s.substr(colon + 1))) return std::nullopt;
  return std::make_pair(std::string(s.substr(0, colon)),
                        std::strtol(std::string(s.substr(colon + 1)).c_str(), nullptr, 10));
}

std::optional<SystemLine> nvlink(sv m) {
  if (!skip(m, "NVRM: ")) return std::nullopt;
  SystemLine l{"nvlink_training_failed", "", "", -1};
  // The driver's per-GPU prefix, as in "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.".
  if (starts(m, "GPU ")) {
    const sv rest = m.substr(4);
    const size_t c = rest.find(": ");
    if (c == sv::npos) return std::nullopt;
    auto bus = log_bus_id(rest.substr(0, c));
    if (!bus) return std::nullopt;
    l.device = *bus;
    m = rest.substr(c + 2);
  }
  const size_t c = m.find(": ");
  if (c == sv::npos || !identifier(m.substr(0, c))) return std::nullopt;
  const sv fn = m.substr(0, c), text = trim_right(m.substr(c + 2));
  if (starts(fn, "knvlinkUpdatePostRxDetectLinkMask_") &&
      text == "Failed to update Rx Detect Link mask!") {
    l.detail = "Failed to update Rx Detect Link mask";
    return l;
  }
  sv t = text;
  if (starts(fn, "knvlinkDiscoverPostRxDetLinks_") && skip(t, "Getting peer") &&
      !take_digits(t).empty()) {
    skip(t, "'s");
    if (t == " postRxDetLinkMask failed!") {
      l.detail = "Getting a peer's postRxDetLinkMask failed";
      return l;
    }
  }
  return std::nullopt;
}

std::optional<SystemLine> hung_task(sv m) {
  sv t = trim_right(m);
  skip(t, "INFO: ");
  if (!skip(t, "task ")) return std::nullopt;
  constexpr sv kBlocked = " blocked for more than ";
  const size_t b = t.rfind(kBlocked);
  if (b == sv::npos) return std::nullopt;
  auto who = comm_pid(t.substr(0, b));
  sv rest = t.substr(b + kBlocked.size());
  const sv secs = take_digits(rest);
  if (!who || secs.empty() || rest != " seconds.") return std::nullopt;
  return SystemLine{"hung_task", who->first, "blocked for more than " + std::string(secs) + " s",
                    who->second};
}

std::optional<SystemLine> soft_lockup(sv m) {
  sv t = trim_right(m);
  if (!skip(t, "watchdog: ")) skip(t, "NMI watchdog: ");
  if (!skip(t, "BUG: soft lockup - CPU#")) return std::nullopt;
  const sv cpu = take_digits(t);
  if (cpu.empty() || !skip(t, " stuck for ")) return std::nullopt;
  const sv secs = take_digits(t);
  if (secs.empty() || !skip(t, "s! [") || t.empty() || t.back() != ']') return std::nullopt;
  auto who = comm_pid(t.substr(0, t.size() - 1));
  if (!who) return std::nullopt;
  return SystemLine{"soft_lockup", who->first,
                    "CPU#" + std::string(cpu) + " stuck for " + std::string(secs) + " s",
                    who->second};
}

std::optional<SystemLine> hard_lockup(sv m) {
  sv t = trim_right(m);
  if (!skip(t, "watchdog: ")) skip(t, "NMI watchdog: ");
  if (!skip(t, "Watchdog detected hard LOCKUP on cpu ") || !digits(t)) return std::nullopt;
  return SystemLine{"hard_lockup", "CPU " + std::string(t), "", -1};
}

std::optional<SystemLine> rcu_stall(sv m) {
  sv t = trim_right(m);
  skip(t, "rcu: ");
  if (!skip(t, "INFO: ")) return std::nullopt;
  const size_t sp = t.find(' ');
  if (sp == sv::npos) return std::nullopt;
  const sv flavour = t.substr(0, sp);
  if (!starts(flavour, "rcu_") || !identifier(flavour)) return std::nullopt;
  const sv what = t.substr(sp + 1);
  for (sv w : {sv("detected stalls on CPUs/tasks"), sv("detected stall on CPU"),
               sv("self-detected stall on CPU"), sv("detected expedited stalls on CPUs/tasks")})
    if (starts(what, w))
      return SystemLine{"rcu_stall", "", std::string(flavour) + " " + std::string(w), -1};
  return std::nullopt;
}

std::optional<SystemLine> panic(sv m) {
  sv t = trim_right(m);
  if (!skip(t, "Kernel panic - not syncing: ")) return std::nullopt;
  // At most 160 bytes, cut at the start of a character: the reason reaches the JSON report.
  size_t cut = std::min<size_t>(t.size(), 160);
  while (cut < t.size() && cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xc0) == 0x80) --cut;
  return SystemLine{"kernel_panic", "", std::string(t.substr(0, cut)), -1};
}

// "N (name)" or "N, UID U, (name)" after "Kill(ed) process ".
std::optional<SystemLine> killed(sv t, const char* kind) {
  const sv pid = take_digits(t);
  if (pid.empty()) return std::nullopt;
  const size_t open = t.find('('), close = t.find(')', open);
  if (open == sv::npos || close == sv::npos || open > 24) return std::nullopt;
  return SystemLine{kind, std::string(t.substr(open + 1, close - open - 1)), "",
                    std::strtol(std::string(pid).c_str(), nullptr, 10)};
}

std::optional<SystemLine> oom(sv m) {
  sv t = m;
  const char* kind = "oom_kill";
  if (skip(t, "Memory cgroup out of memory: ")) {
    kind = "oom_kill_cgroup";
  } else if (skip(t, "oom-kill:")) {
    // "constraint=CONSTRAINT_MEMCG,nodemask=(null),...,task=python,pid=698405,uid=1000"
    SystemLine l{"oom_kill", "", "", -1};
    const sv fields = trim_right(t);
    size_t at = 0;
    while (at < fields.size()) {
      size_t end = fields.find(',', at);
      if (end == sv::npos) end = fields.size();
      const sv f = fields.substr(at, end - at);
      if (f == "constraint=CONSTRAINT_MEMCG") l.kind = "oom_kill_cgroup";
      if (starts(f, "task=")) l.device = std::string(f.substr(5));
      if (starts(f, "pid=") && digits(f.substr(4)))
        l.pid = std::strtol(std::string(f.substr(4)).c_str(), nullptr, 10);
      at = end + 1;
    }
    if (!starts(fields, "constraint=")) return std::nullopt;
    return l;
  } else if (!skip(t, "Out of memory: ")) {
    // Before 4.19 the kill itself came on a line of its own after "Out of memory: Kill process".
    return skip(t, "Killed process ") ? killed(t, kind) : std::nullopt;
  }
  if (skip(t, "Killed process ") || skip(t, "Kill process ")) return killed(t, kind);
  return std::nullopt;
}

std::optional<SystemLine> mce(sv m) {
  sv t = trim_right(m);
  skip(t, "mce: ");
  if (!skip(t, "[Hardware Error]: ")) return std::nullopt;
  if (t == "Machine check events logged") return SystemLine{"mce_logged", "", "", -1};
  if (skip(t, "Machine check: ")) return SystemLine{"mce_context", "", std::string(t), -1};
  if (!skip(t, "CPU ")) return std::nullopt;
  const sv cpu = take_digits(t);
  if (cpu.empty() || !skip(t, ": Machine Check")) return std::nullopt;
  const bool exception = skip(t, " Exception");
  if (!skip(t, ": ") || take_digits(t).empty() || !skip(t, " Bank ")) return std::nullopt;
  const sv bank = take_digits(t);
  if (bank.empty()) return std::nullopt;
  const std::string where = "CPU " + std::string(cpu) + " bank " + std::string(bank);
  // An exception is not corrected, whatever its status says (a copy may leave the status out).
  if (exception && t.empty()) return SystemLine{"mce_uncorrected", "", where, -1};
  if (!skip(t, ": ")) return std::nullopt;
  const sv status = t.substr(0, t.find(' '));
  if (status.empty() || status.size() > 16 ||
      status.find_first_not_of("0123456789abcdefABCDEF") != sv::npos)
    return std::nullopt;
  // MCi_STATUS bit 61, UC: the error was not corrected (Intel SDM vol. 3B, 16.3.2.2).
  const bool uc = (std::strtoull(std::string(status).c_str(), nullptr, 16) >> 61) & 1;
  return SystemLine{exception || uc ? "mce_uncorrected" : "mce_corrected", "", where, -1};
}

std::optional<SystemLine> mlx5(sv m) {
  auto p = device_prefix(m);
  std::string bus;
  sv t;
  if (p && p->driver == "mlx5_core") {
    bus = p->bus;
    t = trim_right(p->rest);
  } else if (m.substr(0, 23) == "mlx5_port_module_event:") {
    // The same report without mlx5_core's device prefix, as gpud's tests (and the captures they
    // were taken from) hold it: the function name is mlx5's own, so the record is still the
    // driver's; the finding then names no NIC.
    t = trim_right(m);
  } else {
    return std::nullopt;
  }
  // mlx5_core_err/warn put "function:line:(pid N): " first; some copies drop the "(pid N)".
  if (const size_t c = t.find(':'); c != sv::npos && identifier(t.substr(0, c))) {
    sv after = t.substr(c + 1);
    if (!take_digits(after).empty() && skip(after, ":")) {
      if (skip(after, "(pid ")) {
        if (take_digits(after).empty() || !skip(after, "):")) return std::nullopt;
      }
      skip(after, " ");
      t = after;
    }
  }
  if (skip(t, "Port module event[error]: module ")) {
    if (take_digits(t).empty() || !skip(t, ", ")) return std::nullopt;
    // "<status>, <error type>": the status is "Cable error"; the type says what.
    const size_t c = t.find(", ");
    return SystemLine{"mlx5_module_error", bus, std::string(c == sv::npos ? t : t.substr(c + 2)),
                      -1};
  }
  if (skip(t, "Detected insufficient power on the PCIe slot (")) {
    const size_t close = t.find(')');
    if (close == sv::npos || close > 8) return std::nullopt;
    return SystemLine{"mlx5_slot_power", bus, std::string(t.substr(0, close)), -1};
  }
  if (t == "PCIe slot power capability was not advertised.")
    return SystemLine{"mlx5_slot_power_unadvertised", bus, "", -1};
  return std::nullopt;
}

}  // namespace

std::optional<SystemLine> parse_system_line(sv message) {
  const sv m = message.substr(0, message.find('\n'));
  for (auto parse : {nvlink, hung_task, soft_lockup, hard_lockup, rcu_stall, panic, oom, mce, mlx5})
    if (auto l = parse(m)) return l;
  return std::nullopt;
}

}  // namespace fabkit::probes
