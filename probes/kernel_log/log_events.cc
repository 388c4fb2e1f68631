// What the kernel log's lines say, in one pass: NVIDIA Xid lines and "fallen off the bus" lines,
// PCIe AER reports, mlx5 firmware health and command timeouts, links going down. Repeats of one
// event on one device are grouped (count, first and last time). Pure.
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
//    "Uncorrectable (Fatal)" and "Correctable". "AER: device recovery failed" (pcie/err.c).
//  mlx5 (drivers/net/ethernet/mellanox/mlx5/core/health.c, cmd.c): "poll_health: device's
//    health compromised - reached miss count", "Fatal error %u detected", "Health issue
//    observed, ...", "wait_func_handle_exec_timeout: ... No done completion", "wait_func: ...
//    timeout. Will cause a leak of a command resource".
//  Links: "mlx5_core 0000:42:00.1 eth4: Link down" (mlx5e), "igc 0000:05:00.0 eth5: NIC Link is
//    Down", "mlx4_en: enp1s0: Link Down", "bond0: link status definitely down for interface
//    eno50", "pcieport 0000:00:1c.0: pciehp: Slot(1): Link Down", "mlx5_5: Port: 1 Link DOWN".
#include <algorithm>
#include <cctype>

#include "common/file_reader.h"
#include "probes/kernel_log/kernel_log_facts.h"
#include "topo/pci_bus_id.h"

namespace fabkit::probes {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Case-insensitive find of a lower-case needle, without copying the haystack (it runs on every
// record).
size_t ifind(const std::string& hay, const char* needle) {
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

// "0000:18:00.0" for a bus id with or without a function ("PCI:0000:18:00" in Xid lines).
std::optional<std::string> bus_id(std::string text) {
  while (!text.empty() && (text.back() == ':' || text.back() == ',' || text.back() == '.'))
    text.pop_back();
  if (starts_with(text, "PCI:")) text = text.substr(4);
  if (auto n = topo::normalize_bus_id(text)) return n;
  if (std::count(text.begin(), text.end(), ':') == 2 && text.find('.') == std::string::npos)
    return topo::normalize_bus_id(text + ".0");
  return std::nullopt;
}

// The device a dev_printk line names: "pcieport 0000:00:02.0: ..." -> 0000:00:02.0.
std::optional<std::string> printk_device(const std::string& m) {
  size_t sp = m.find(' ');
  if (sp == std::string::npos) return std::nullopt;
  // The bus id contains colons itself ("0000:00:02.0:"): the token runs to the next blank.
  size_t end = m.find(' ', sp + 1);
  return bus_id(m.substr(sp + 1, end == std::string::npos ? std::string::npos : end - sp - 1));
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
    size_t p = r.message.find("NVRM: Xid (");
    if (p == std::string::npos) return false;
    size_t close = r.message.find("): ", p);
    if (close == std::string::npos) return false;
    const std::string dev_text = r.message.substr(p + 11, close - p - 11);
    size_t num_end = r.message.find(',', close + 3);
    std::string num = trim(r.message.substr(
        close + 3, num_end == std::string::npos ? std::string::npos : num_end - close - 3));
    if (num.empty() || num.size() > 4 || num.find_first_not_of("0123456789") != std::string::npos)
      return false;
    const int code = std::stoi(num);
    std::string detail = num_end == std::string::npos ? "" : trim(r.message.substr(num_end + 1));
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
    const std::string bus = bus_id(dev_text).value_or(dev_text);
    auto key = std::make_pair(code, bus);
    auto it = xid_index.find(key);
    if (it == xid_index.end()) {
      XidGroup g;
      g.xid = code;
      g.bus_id = bus;
      g.device_name = name_of(bus);
      g.sample = first_line(r.message.substr(p));
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
    if (r.message.find("NVRM:") == std::string::npos ||
        r.message.find("fallen off the bus") == std::string::npos)
      return false;
    // "The NVIDIA GPU 0000:b3:00.0" / "GPU at 0000:01:00.0" / "GPU at PCI:0000:01:00" /
    // "NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus."
    std::string device = "unknown GPU";
    for (const char* marker : {"NVIDIA GPU ", "GPU at ", "NVRM: GPU "}) {
      size_t p = r.message.find(marker);
      if (p == std::string::npos) continue;
      size_t s = p + std::string(marker).size();
      size_t e = r.message.find_first_of(" \n", s);
      if (auto b =
              bus_id(r.message.substr(s, e == std::string::npos ? std::string::npos : e - s))) {
        device = *b;
        break;
      }
    }
    count(event("gpu_off_bus", device, r), r);
    return true;
  }

  bool aer(const KernelLogRecord& r) {
    const std::string& m = r.message;
    // Most records are not about AER: skip them before taking the device apart.
    if (last_aer.empty() && m.find("PCIe Bus Error") == std::string::npos &&
        m.find("AER:") == std::string::npos)
      return false;
    auto dev = printk_device(m);
    size_t sev = m.find("PCIe Bus Error: severity=");
    if (sev != std::string::npos && dev) {
      std::string s = m.substr(sev + 25, m.find(',', sev) - sev - 25);
      std::string kind = s.find("Non-Fatal") != std::string::npos ? "aer_nonfatal"
                         : s.find("Fatal") != std::string::npos   ? "aer_fatal"
                                                                  : "aer_correctable";
      LogEventGroup& g = event(kind, *dev, r);
      count(g, r);
      last_aer[*dev] = event_index[{kind, *dev}];
      return true;
    }
    if (m.find("AER: device recovery failed") != std::string::npos && dev) {
      count(event("aer_recovery_failed", *dev, r), r);
      return true;
    }
    // An error bit of the report above: "pcieport 0000:00:02.0:    [ 5] Surprise Down Error".
    if (dev) {
      size_t colon = m.find(": ", m.find(' ') + 1);
      size_t open =
          colon == std::string::npos ? std::string::npos : m.find_first_not_of(' ', colon + 1);
      auto it = last_aer.find(*dev);
      if (open != std::string::npos && m[open] == '[' && it != last_aer.end()) {
        size_t close = m.find(']', open);
        if (close != std::string::npos && close - open <= 4) {
          std::string bit = trim(m.substr(close + 1));
          if (size_t first = bit.find("(First)"); first != std::string::npos)
            bit = trim(bit.substr(0, first));
          auto& details = f.events[it->second].details;
          if (!bit.empty() && details.size() < 16 &&
              std::find(details.begin(), details.end(), bit) == details.end())
            details.push_back(bit);
          return true;
        }
      }
    }
    return false;
  }

  bool link(const KernelLogRecord& r) {
    const std::string& l = r.message;
    if (ifind(l, "link") == std::string::npos) return false;
    size_t down = std::string::npos;
    for (const char* w :
         {": link down", "link is down", "link status definitely down", " link down"}) {
      down = ifind(l, w);
      if (down != std::string::npos) break;
    }
    const bool up = down == std::string::npos && (ifind(l, ": link up") != std::string::npos ||
                                                  ifind(l, "link is up") != std::string::npos ||
                                                  ifind(l, " link active") != std::string::npos);
    if (down == std::string::npos && !up) return false;
    std::string device;
    if (size_t iface = ifind(l, "for interface "); iface != std::string::npos) {
      size_t s = iface + 14, e = r.message.find_first_of(" ,\n", s);
      device = r.message.substr(s, e == std::string::npos ? std::string::npos : e - s);
    } else if (auto b = printk_device(r.message)) {
      device = *b;
    } else {
      // "mlx4_en: enp1s0: Link Down": the last name before the words.
      size_t at = down != std::string::npos ? down : ifind(l, "link");
      auto parts = split(trim(r.message.substr(0, at)), ' ');
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        std::string t = *it;
        while (!t.empty() && t.back() == ':') t.pop_back();
        if (!t.empty() && lower(t) != "nic" && lower(t) != "port:") {
          device = t;
          break;
        }
      }
    }
    if (device.empty()) device = "unknown";
    if (up) {
      auto it = event_index.find({"link_down", device});
      if (it != event_index.end()) ++f.events[it->second].ups_after_last_down;
      return true;
    }
    LogEventGroup& g = event("link_down", device, r);
    count(g, r);
    g.ups_after_last_down = 0;
    return true;
  }

  bool mlx5(const KernelLogRecord& r) {
    const std::string& m = r.message;
    if (!starts_with(m, "mlx5_core ")) return false;
    const std::string device = printk_device(m).value_or("mlx5_core");
    if (m.find("health compromised") != std::string::npos ||
        m.find("Fatal error") != std::string::npos ||
        m.find("Health issue observed") != std::string::npos ||
        m.find("unrecoverable") != std::string::npos) {
      count(event("mlx5_health", device, r), r);
      return true;
    }
    if (ifind(m, "timeout") != std::string::npos &&
        (m.find("cmd") != std::string::npos || m.find("wait_func") != std::string::npos)) {
      count(event("mlx5_cmd_timeout", device, r), r);
      return true;
    }
    return false;
  }

  void scan(const KernelLogRecord& r) {
    if (xid(r) || off_bus(r) || aer(r) || link(r)) return;
    mlx5(r);
  }
};

}  // namespace

void scan_kernel_log(const std::vector<KernelLogRecord>& records,
                     const std::map<std::string, std::string>& names, KernelLogFacts& f) {
  Scanner s{names, f, {}, {}, {}};
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
