#include "probes/kernel_log/log_text_heads.h"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <string>

#include "probes/kernel_log/kernel_log_facts.h"

namespace fabkit::probes {

std::optional<int> facility_number(std::string_view name) {
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  static constexpr const char* kNames[] = {"kern", "user", "mail", "daemon", "auth",     "syslog",
                                           "lpr",  "news", "uucp", "cron",   "authpriv", "ftp"};
  for (int i = 0; i < static_cast<int>(std::size(kNames)); ++i)
    if (name == kNames[i]) return i;
  if (name.size() == 6 && name.substr(0, 5) == "local" && name[5] >= '0' && name[5] <= '7')
    return 16 + (name[5] - '0');
  return std::nullopt;
}

std::optional<int> decode_prefix(std::string_view line, std::string_view* rest) {
  const size_t c1 = line.find(':');
  if (c1 == std::string_view::npos || c1 > 10) return std::nullopt;
  auto facility = facility_number(line.substr(0, c1));
  const size_t c2 = line.find(':', c1 + 1);
  if (!facility || c2 == std::string_view::npos || c2 > c1 + 8) return std::nullopt;
  std::string_view level = line.substr(c1 + 1, c2 - c1 - 1);
  while (!level.empty() && level.back() == ' ') level.remove_suffix(1);
  static constexpr const char* kLevels[] = {"emerg", "alert",  "crit", "err",
                                            "warn",  "notice", "info", "debug"};
  bool known = false;
  for (const char* l : kLevels) known = known || level == l;
  if (!known || (c2 + 1 < line.size() && line[c2 + 1] != ' ')) return std::nullopt;
  *rest = line.substr(std::min(line.size(), c2 + 2));
  return facility;
}

std::optional<double> iso_time(std::string_view s, size_t* used, bool* comma) {
  auto digits_at = [&](size_t at, size_t n) {
    if (at + n > s.size()) return false;
    for (size_t i = at; i < at + n; ++i)
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    return true;
  };
  auto num = [&](size_t at, size_t n) { return std::atoi(std::string(s.substr(at, n)).c_str()); };
  if (s.size() < 19) return std::nullopt;
  if (!digits_at(0, 4) || s[4] != '-' || !digits_at(5, 2) || s[7] != '-' || !digits_at(8, 2) ||
      (s[10] != 'T' && s[10] != ' ') || !digits_at(11, 2) || s[13] != ':' || !digits_at(14, 2) ||
      s[16] != ':' || !digits_at(17, 2))
    return std::nullopt;
  size_t i = 19;
  double frac = 0;
  *comma = false;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    *comma = s[i] == ',';
    size_t j = i + 1;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j == i + 1) return std::nullopt;
    frac = std::strtod(("0." + std::string(s.substr(i + 1, j - i - 1))).c_str(), nullptr);
    i = j;
  }
  long offset_s = 0;
  if (i < s.size() && s[i] == 'Z') {
    ++i;
  } else if (i < s.size() && (s[i] == '+' || s[i] == '-') && digits_at(i + 1, 2)) {
    const size_t mm = i + 3 < s.size() && s[i + 3] == ':' ? i + 4 : i + 3;
    if (!digits_at(mm, 2)) return std::nullopt;
    offset_s = (s[i] == '-' ? -1 : 1) * (num(i + 1, 2) * 3600L + num(mm, 2) * 60L);
    i = mm + 2;
  } else {
    return std::nullopt;
  }
  if (i < s.size() && s[i] != ' ') return std::nullopt;
  struct tm tm {};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(5, 2) - 1;
  tm.tm_mday = num(8, 2);
  tm.tm_hour = num(11, 2);
  tm.tm_min = num(14, 2);
  tm.tm_sec = num(17, 2);
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60)
    return std::nullopt;
  *used = i;
  return static_cast<double>(timegm(&tm) - offset_s) + frac;
}

// place_wall_times is kernel_log_facts.h's: wall-clock times are this file's subject.
void place_wall_times(std::vector<KernelLogRecord>& records, std::optional<int64_t> boot_unix_s) {
  if (!boot_unix_s) return;
  for (auto& r : records)
    if (!r.time_s && r.unix_s && *r.unix_s >= static_cast<double>(*boot_unix_s))
      r.time_s = *r.unix_s - static_cast<double>(*boot_unix_s);
}

}  // namespace fabkit::probes
