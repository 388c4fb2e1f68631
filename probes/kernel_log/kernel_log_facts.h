// Probe 10, the kernel log: NVIDIA Xid lines, NVSwitch SXid lines (sxid.h), mlx5 firmware health
// and command timeouts, PCIe AER reports and link-down lines (counted over time: link_flaps.h),
// in one pass over the log since boot (or since --since).
//
// Live, it reads /dev/kmsg without blocking (O_NONBLOCK, one record per read, EAGAIN = the end,
// EPIPE = records overwritten while reading). That needs CAP_SYSLOG when kernel.dmesg_restrict is
// 1; a denied read is a fact ("unknown, here is why"), not a fault. Under --sysroot DIR it reads
// the file DIR/dev/kmsg: records as /dev/kmsg gives them (`dd if=/dev/kmsg iflag=nonblock
// bs=64k`), or `dmesg` text (`[  123.456789] message`, also with -T/--ctime, syslog or
// journalctl prefixes), the format told line by line.
//
// A local user can write to the log (/dev/kmsg) and get the kernel to quote a file name they
// chose (a segfault report): only records of the kernel's own facility count, each driver line is
// matched from the start of its record (log_lines.h), and an Xid drains only for a GPU that is on
// this node's PCI bus (KernelLogDevices).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "probes/kernel_log/sxid.h"
#include "probes/kernel_log/xid_catalog.h"
#include "probes/probe_context.h"

namespace fabkit::probes {

// One log record: what the kernel said, and when (seconds since boot; nullopt when the format
// gives no such time, e.g. `dmesg -T` wall-clock stamps or journalctl lines without one).
struct KernelLogRecord {
  KernelLogRecord() = default;
  KernelLogRecord(std::optional<double> time, std::string text,
                  std::optional<int> syslog_facility = std::nullopt)
      : time_s(time), message(std::move(text)), facility(syslog_facility) {}

  std::optional<double> time_s;
  std::string message;  // continuation lines joined with '\n'
  // The syslog facility: 0 (LOG_KERN) for what the kernel printed, above 0 for what user space
  // wrote to /dev/kmsg (which the kernel never lets be 0); nullopt when the format does not say
  // (plain dmesg text), and then the record counts as the kernel's.
  std::optional<int> facility;
  // Unix time, where the format gives a wall-clock time with its UTC offset (`dmesg
  // --time-format iso`, journalctl -o short-iso); place_wall_times turns it into time_s.
  std::optional<double> unix_s;
};

// Every Xid of one number on one GPU.
struct XidGroup {
  int xid = 0;
  std::string bus_id;       // as sysfs names the GPU: "0000:18:00.0"; the log's text if unparsable
  std::string device_name;  // "GPU 0000:18:00.0 (...)" from the PCIe facts, else ""
  int count = 0;
  std::optional<double> first_s, last_s;
  std::vector<std::string> processes;     // name=… of the lines, distinct, at most 8
  std::string sample;                     // the first line of the group (at most 300 characters)
  XidClass cls = XidClass::kApplication;  // from the table, or what the lines said (144-150, 154)
  std::string recovery_action;            // Xid 154: the last action named
};

// Other events of one kind on one device.
struct LogEventGroup {
  // "gpu_off_bus": "NVRM: ... fallen off the bus" without an Xid line (newer drivers print it
  //   on its own); "aer_fatal", "aer_nonfatal", "aer_correctable": a "PCIe Bus Error:
  //   severity=..." report; "aer_recovery_failed": "AER: device recovery failed";
  //   "mlx5_health": the NIC firmware's health poll failed or reported a fatal syndrome;
  //   "mlx5_cmd_timeout": a firmware command timed out; "link_down": a NIC, bond or PCIe slot
  //   (pciehp) link went down.
  std::string kind;
  std::string device;       // the bus id or net device the line names
  std::string device_name;  // from the PCIe facts when the device is there
  int count = 0;
  std::optional<double> first_s, last_s;
  std::vector<std::string> details;  // AER error bits ("Surprise Down Error", "RxErr"), distinct
  std::string sample;
  int ups_after_last_down = 0;  // link_down: "Link up"/"Link ACTIVE" lines after the last down
  // link_down: when each down happened (s after boot), and how many lines had no such time;
  // link_flaps.h counts them per window.
  std::vector<double> down_times_s;
  int untimed_downs = 0;
};

// What the node's PCI bus holds, from the PCIe probe: names for the findings, and the GPUs an
// Xid or off-the-bus line must name before it counts toward a drain.
struct KernelLogDevices {
  std::map<std::string, std::string> names;  // bus id -> "GPU 0000:18:00.0 (...)"
  // NVIDIA GPUs and NVSwitches (bus ids); nullopt when the PCI devices could not be listed.
  std::optional<std::vector<std::string>> gpus;
};

struct KernelLogFacts {
  std::string source;  // "/dev/kmsg" or the file read
  bool readable = false;
  std::string unreadable_reason;  // why not, with the fix
  std::string format;             // "kmsg", "dmesg" or "" (nothing read)
  uint64_t records = 0;           // records read
  uint64_t records_in_window = 0;
  uint64_t untimed_records = 0;           // records with no since-boot time (counted in any window)
  uint64_t lost_records = 0;              // /dev/kmsg EPIPE: overwritten while reading
  uint64_t user_space_records = 0;        // in the window, written by user space: never judged
  std::optional<uint64_t> first_seq;      // kmsg: > 0 when earlier records were already overwritten
  std::optional<double> first_s, last_s;  // the span of the records read
  std::optional<int64_t> boot_time_unix_s;  // <proc>/stat btime, for wall-clock times
  std::string since;                        // --since as given; "" = since boot
  std::optional<double> since_boot_s;       // the window's start in seconds after boot
  std::string window_note;                  // why --since could not be applied, when it could not
  // The NVIDIA GPUs and NVSwitches on this node's PCI bus (KernelLogDevices::gpus): an Xid or
  // off-the-bus line naming another bus is reported, never a drain.
  std::optional<std::vector<std::string>> gpu_bus_ids;
  std::vector<XidGroup> xids;
  std::vector<SxidGroup> sxids;  // NVSwitch SXids (sxid.h)
  std::vector<LogEventGroup> events;
  double read_ms = 0;
};

KernelLogFacts gather_kernel_log(const ProbeContext& ctx, const KernelLogDevices& devices);
// Pure.
std::vector<Finding> judge_kernel_log(const KernelLogFacts& facts);
// Whether bus (normalised) is a GPU or NVSwitch of facts.gpu_bus_ids; nullopt when they are
// unknown.
std::optional<bool> on_gpu(const KernelLogFacts& facts, const std::string& bus);
Json to_json(const KernelLogFacts& facts);

// The pure pieces, exposed for tests.
// One /dev/kmsg record ("6,1234,5678901,-;message\n KEY=value\n"): time from the usec field,
// facility from the priority field (prio >> 3), message unescaped (\xNN). nullopt when it is
// not one.
std::optional<KernelLogRecord> parse_kmsg_record(std::string_view raw, uint64_t* seq = nullptr);
// A whole file: kmsg records or dmesg text, told per line; *format gets "kmsg" or "dmesg".
std::vector<KernelLogRecord> parse_kernel_log_text(const std::string& text, std::string* format);
// Gives records with a wall-clock time and no since-boot time one from the boot time (Unix
// seconds); records before the boot (another boot's, in a journal) keep none.
void place_wall_times(std::vector<KernelLogRecord>& records, std::optional<int64_t> boot_unix_s);
// Filters by the window and groups what the records say into facts.xids and facts.events.
void scan_kernel_log(const std::vector<KernelLogRecord>& records,
                     const std::map<std::string, std::string>& device_names, KernelLogFacts& facts);
// "2h", "90m", "1d12h", "45s" or an RFC 3339 time ("2026-11-26T08:00:00Z", "...+02:00").
// Throws UsageError naming the text and the accepted forms.
KernelLogSince parse_since(const std::string& text);

}  // namespace fabkit::probes
