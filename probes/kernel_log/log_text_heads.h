// The heads of kernel-log text lines that carry a facility or a wall-clock time: util-linux
// dmesg's facility names (-x/--decode) and ISO 8601 times (--time-format iso, journalctl -o
// short-iso, rsyslog). Pure; used by log_records.cc.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace fabkit::probes {

// A syslog facility's name as util-linux's dmesg -x prints it ("kern", "user", "local3").
std::optional<int> facility_number(std::string_view name);

// "kern  :err   : " (dmesg -x/--decode) at the start of a line: the facility, and in *rest what
// follows (a "[stamp]", an ISO time, or the message); nullopt when the line does not start so.
std::optional<int> decode_prefix(std::string_view line, std::string_view* rest);

// "2025-01-21T04:41:44,283302+00:00" (dmesg --time-format iso), "2024-05-18T19:02:39+0000"
// (journalctl -o short-iso), "2024-05-18T19:02:39.123456+00:00" (short-iso-precise, rsyslog's
// RFC 3339) at the start of s, followed by a blank or the end: Unix seconds, with *used the
// characters read and *comma whether a comma came before the fraction (only dmesg writes one).
// nullopt without a UTC offset, whose zone is unknown.
std::optional<double> iso_time(std::string_view s, size_t* used, bool* comma);

}  // namespace fabkit::probes
