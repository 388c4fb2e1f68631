// Readers of the timestamps launchers, collectors and loggers put in front of a log line. Each
// reads from the front of `s` and advances it past what it read; false (and `s` untouched) when
// the text there is not that shape. Internal to fabric/nccl_log.
#pragma once

#include <string_view>

#include "fabric/nccl_log/nccl_log_line.h"

namespace fabkit::nccl_log {

// "HH:MM[:SS[.frac]]" -> seconds of the day.
bool read_clock(std::string_view& s, double* secs);
// ISO 8601 / RFC 3339 date and optional time and zone -> seconds since the epoch (UTC).
bool read_iso_time(std::string_view& s, double* epoch_s);
// ctime's "Fri Aug 11 12:31:45 2023" -> seconds since the epoch.
bool read_ctime(std::string_view& s, double* epoch_s);
// syslog/journald's "Nov 24 03:20:21" into o (month-day time, TimeFormat::kGlogNoYear).
bool read_syslog_time(std::string_view& s, LineOrigin& o);
// glog's "E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607" (inside its brackets) into o.
bool read_glog_head(std::string_view body, LineOrigin& o);

}  // namespace fabkit::nccl_log
