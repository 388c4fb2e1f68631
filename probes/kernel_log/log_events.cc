// What the kernel log's lines say, in one pass: NVIDIA Xid lines and "fallen off the bus" lines,
// PCIe AER reports, mlx5 firmware health and command timeouts, links going down. Repeats of one
// event on one device are grouped (count, first and last time). Pure.
//
// Only records the kernel printed count: a record user space wrote to /dev/kmsg carries its
// facility (log_records.cc), and each line is matched by its driver's prefix at the start of the
// message (log_lines.h says why), never by a phrase anywhere in it.
//
// The line formats matched, with where they come from:
//  Xid: "NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python3, GPU has fallen off the bus."
//    (open-gpu-kernel-modules nverror.c; older drivers omit "PCI:" and pid/name, newer print
//    pid='<unknown>', name=<unknown>; tests/fixtures/kernel_log/README.md lists real lines).
//  Off the bus without an Xid: "NVRM: The NVIDIA GPU 0000:b3:00.0 / (PCI ID: 10de:26b5)
//    installed in this system has / fallen off the bus" and "NVRM: GPU at 0000:01:00.0 has
//    fallen off the bus." (NVIDIA/NVSentinel#155).
//  AER (drivers/pci/pcie/aer.c, aer_print_error): "pcieport 0000:00:02.0: PCIe Bus Error:
//    severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)", then one
//    "   [ 5] Surprise Down Error    (First)" line per error bit; newer kernels say
//    "Uncorrectable (Fatal)" and "Correctable", and put "AER: " before both. "AER: device
//    recovery failed" (pcie/err.c).
//  mlx5 (drivers/net/ethernet/mellanox/mlx5/core/health.c, cmd.c): "poll_health: device's
//    health compromised - reached miss count", "Fatal error %u detected", "Health issue
//    observed, ...", "wait_func_handle_exec_timeout: ... No done completion", "wait_func: ...
//    timeout. Will cause a leak of a command resource".
//  Links: log_lines.h lists them.
//  NVLink training, hung tasks, lockups, RCU stalls, panics, the OOM killer, machine checks and
//    mlx5 module and slot-power events: system_lines.h lists them.
#include <algorithm>
#include <cctype>

#include "common/file_reader.h"
#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/kernel_log/log_lines.h"
#include "probes/kernel_log/system_lines.h"

namespace fabkit::probes {
namespace {

// Case-insensitive find of a lower-case needle, without copying the haystack.
size_t ifind(std::string_view hay, const char* needle) {
  const size_t n = std::char_traits<char>::length(needle);
  auto it = std::search(hay.begin(), hay.end(), needle, needle + n, [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  });
  return it == hay.end() ? std::string::npos : static_cast<size_t>(it - hay.begin());
}

// A record's first line as a sample, at most ~300 bytes. Messages are UTF-8 by now
// (log_records.cc); the cut backs off to the start of a character so it stays so.
std::string first_line(const std::string& m) {
  std::string l = m.substr(0, m.find('\n'));
  if (l.size() <= 300) return l;
  size_t cut = 297;
  while (cut > 0 && (static_cast<unsigned char>(l[cut]) & 0xc0) == 0x80) --cut;
  return l.substr(0, cut) + "...";
}

int cls_rank(XidClass c) {
  switch (c) {
    case XidClass::kDrain:
      return 3;
    case XidClass::kByMessage:
      return 2;
    case XidClass::kApplication:
      return 1;
    case XidClass::kInformational:
      return 0;
  }
  return 1;
}

struct Scanner {
  const std::map<std::string, std::string>& names;
  KernelLogFacts& f;
  std::map<std::pair<int, std::string>, size_t> xid_index;
  std::map<std::pair<std::string, std::string>, size_t> event_index;
  std::map<std::string, size_t> last_aer;  // device -> its latest AER group, for the bit lines
  long last_oom_pid = -1;                  // the process the OOM killer's last line named

  std::string name_of(const std::string& bus) const {
    auto it = names.find(bus);
    return it == names.end() ? "" : it->second;
  }

  void stamp(std::optional<double>& first, std::optional<double>& last,
             const std::optional<double>& t) {
    if (!t) return;
    if (!first || *t < *first) first = t;
    if (!last || *t > *last) last = t;
  }

  LogEventGroup& event(const std::string& kind, const std::string& device,
                       const KernelLogRecord& r) {
    auto key = std::make_pair(kind, device);
    auto it = event_index.find(key);
    if (it == event_index.end()) {
      LogEventGroup g;
      g.kind = kind;
      g.device = device;
      g.device_name = name_of(device);
      g.sample = first_line(r.message);
      f.events.push_back(g);
      it = event_index.emplace(key, f.events.size() - 1).first;
    }
    LogEventGroup& g = f.events[it->second];
    return g;
  }

  void count(LogEventGroup& g, const KernelLogRecord& r) {
    ++g.count;
    stamp(g.first_s, g.last_s, r.time_s);
  }

  bool xid(const KernelLogRecord& r) {
    auto line = parse_xid_line(r.message);
    if (!line) return false;
    const int code = line->xid;
    std::string detail = line->detail;
    std::string process;
    for (const char* key : {"pid=", "name="}) {
      if (!starts_with(detail, key)) continue;
      size_t comma = detail.find(", ");
      std::string value = detail.substr(
          std::string(key).size(),
          comma == std::string::npos ? std::string::npos : comma - std::string(key).size());
      if (std::string(key) == "name=" && value != "<unknown>") process = value;
      detail = comma == std::string::npos ? "" : detail.substr(comma + 2);
    }
    const std::string& bus = line->bus;
    auto key = std::make_pair(code, bus);
    auto it = xid_index.find(key);
    if (it == xid_index.end()) {
      XidGroup g;
      g.xid = code;
      g.bus_id = bus;
      g.device_name = name_of(bus);
      g.sample = first_line(r.message);
      const XidInfo* info = find_xid(code);
      g.cls = info ? info->cls : XidClass::kApplication;
      f.xids.push_back(g);
      it = xid_index.emplace(key, f.xids.size() - 1).first;
    }
    XidGroup& g = f.xids[it->second];
    ++g.count;
    stamp(g.first_s, g.last_s, r.time_s);
    if (!process.empty() && g.processes.size() < 8 &&
        std::find(g.processes.begin(), g.processes.end(), process) == g.processes.end())
      g.processes.push_back(process);
    const XidInfo* info = find_xid(code);
    if (info && info->cls == XidClass::kByMessage) {
      auto said = xid_class_from_message(code, detail);
      if (code == 154) {
        // The latest action is the one that stands ("to 0x0 (None)" clears an earlier reset).
        if (said) g.cls = *said;
        if (!xid154_action(detail).empty()) g.recovery_action = xid154_action(detail);
      } else if (said && (g.cls == XidClass::kByMessage || cls_rank(*said) > cls_rank(g.cls))) {
        g.cls = *said;
      }
    }
    return true;
  }

  bool off_bus(const KernelLogRecord& r) {
    auto bus = parse_off_bus_line(r.message);
    if (!bus) return false;
    count(event("gpu_off_bus", *bus, r), r);
    return true;
  }

  bool aer(const KernelLogRecord& r) {
    auto p = device_prefix(r.message);
    if (!p) return false;
    std::string_view rest = p->rest;
    // Newer kernels print every AER line through pci_err with dev_fmt "AER: ".
    if (rest.substr(0, 5) == "AER: ") rest.remove_prefix(5);
    constexpr std::string_view kSeverity = "PCIe Bus Error: severity=";
    if (rest.substr(0, kSeverity.size()) == kSeverity) {
      std::string_view s = rest.substr(kSeverity.size());
      s = s.substr(0, s.find(','));
      std::string kind = s.find("Non-Fatal") != std::string::npos ? "aer_nonfatal"
                         : s.find("Fatal") != std::string::npos   ? "aer_fatal"
                                                                  : "aer_correctable";
      count(event(kind, p->bus, r), r);
      last_aer[p->bus] = event_index[{kind, p->bus}];
      return true;
    }
    if (rest == "device recovery failed") {
      count(event("aer_recovery_failed", p->bus, r), r);
      return true;
    }
    // An error bit of the report above: "pcieport 0000:00:02.0:    [ 5] Surprise Down Error".
    auto it = last_aer.find(p->bus);
    size_t open = rest.find_first_not_of(' ');
    if (it == last_aer.end() || open == std::string_view::npos || rest[open] != '[') return false;
    size_t close = rest.find(']', open);
    if (close == std::string_view::npos || close - open > 4) return false;
    std::string bit = trim(std::string(rest.substr(close + 1)));
    if (size_t first = bit.find("(First)"); first != std::string::npos)
      bit = trim(bit.substr(0, first));
    auto& details = f.events[it->second].details;
    if (!bit.empty() && details.size() < 16 &&
        std::find(details.begin(), details.end(), bit) == details.end())
      details.push_back(bit);
    return true;
  }

  bool link(const KernelLogRecord& r) {
    auto l = parse_link_line(r.message);
    if (!l) return false;
    if (!l->down) {
      auto it = event_index.find({"link_down", l->device});
      if (it != event_index.end()) ++f.events[it->second].ups_after_last_down;
      return true;
    }
    LogEventGroup& g = event("link_down", l->device, r);
    count(g, r);
    g.ups_after_last_down = 0;
    if (r.time_s)
      g.down_times_s.push_back(*r.time_s);
    else
      ++g.untimed_downs;
    return true;
  }

  bool mlx5(const KernelLogRecord& r) {
    auto p = device_prefix(r.message);
    if (!p || p->driver != "mlx5_core") return false;
    const std::string_view m = p->rest;
    auto has = [&](const char* w) { return m.find(w) != std::string_view::npos; };
    if (has("health compromised") || has("Fatal error") || has("Health issue observed") ||
        has("unrecoverable")) {
      count(event("mlx5_health", p->bus, r), r);
      return true;
    }
    if (ifind(m, "timeout") != std::string::npos && (has("cmd") || has("wait_func"))) {
      count(event("mlx5_cmd_timeout", p->bus, r), r);
      return true;
    }
    return false;
  }

  bool system(const KernelLogRecord& r) {
    auto l = parse_system_line(r.message);
    if (!l) return false;
    if (l->kind == "oom_kill" || l->kind == "oom_kill_cgroup") {
      // One kill prints two lines ("oom-kill:..." then "Out of memory: Killed process"; before
      // 4.19 "Kill process" then "Killed process"), both naming the process killed.
      if (l->pid >= 0 && l->pid == last_oom_pid) return true;
      last_oom_pid = l->pid;
    }
    // mce_panic's reason ("Processor context corrupt") belongs to the exception above it.
    const bool reason = l->kind == "mce_context";
    if (reason) l->kind = "mce_uncorrected";
    const bool known = event_index.count({l->kind, l->device}) > 0;
    LogEventGroup& g = event(l->kind, l->device, r);
    if (!reason || !known) count(g, r);
    if (!l->detail.empty() && g.details.size() < 16 &&
        std::find(g.details.begin(), g.details.end(), l->detail) == g.details.end())
      g.details.push_back(l->detail);
    return true;
  }

  void scan(const KernelLogRecord& r) {
    // devkmsg_write (kernel/printk/printk.c) gives what user space writes to /dev/kmsg the
    // facility LOG_USER, or the one its "<N>" prefix names, but never LOG_KERN (0): "to be able
    // to reliably distinguish kernel-generated messages from userspace-injected ones".
    if (r.facility && *r.facility != 0) {
      ++f.user_space_records;
      return;
    }
    if (xid(r) || off_bus(r) || aer(r) || link(r) || mlx5(r)) return;
    system(r);
  }
};

}  // namespace

void scan_kernel_log(const std::vector<KernelLogRecord>& records,
                     const std::map<std::string, std::string>& names, KernelLogFacts& f) {
  Scanner s{names, f, {}, {}, {}, -1};
  for (const auto& r : records) {
    ++f.records;
    if (r.time_s) {
      if (!f.first_s || *r.time_s < *f.first_s) f.first_s = r.time_s;
      if (!f.last_s || *r.time_s > *f.last_s) f.last_s = r.time_s;
    } else {
      ++f.untimed_records;
    }
  }
  for (const auto& r : records) {
    if (f.since_boot_s && r.time_s && *r.time_s < *f.since_boot_s) continue;
    ++f.records_in_window;
    s.scan(r);
  }
  scan_sxids(records, names, f);
  // Off-the-bus lines that repeat an Xid 79 of the same GPU add nothing.
  std::vector<LogEventGroup> kept;
  for (auto& e : f.events) {
    bool dup = false;
    if (e.kind == "gpu_off_bus")
      for (const auto& x : f.xids) dup = dup || (x.xid == 79 && x.bus_id == e.device);
    if (!dup) kept.push_back(std::move(e));
  }
  f.events = std::move(kept);
}

}  // namespace fabkit::probes
