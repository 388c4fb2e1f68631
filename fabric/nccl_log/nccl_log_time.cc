// Timestamps in front of log lines: ISO 8601/RFC 3339 (and the shapes loggers bend it into),
// ctime, syslog/journald and glog. Hand-written for the same reason as nccl_log_line.cc: this runs
// on every line.
#include "fabric/nccl_log/nccl_log_time.h"

#include "fabric/nccl_log/nccl_log_scan.h"

namespace fabkit::nccl_log {

using namespace scan;

namespace {
constexpr sv kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
}  // namespace

namespace {

// Howard Hinnant's days_from_civil: days since 1970-01-01 of a proleptic Gregorian date.
long days_from_civil(long y, long m, long d) {
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const long yoe = y - era * 400;
  const long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

// "HH:MM[:SS[.frac]]" -> seconds of the day.
bool read_clock(sv& s, double* secs) {
  sv t = s;
  long h, m, sec = 0;
  if (!read_int(t, &h, 2) || !eat(t, ':') || !read_int(t, &m, 2)) return false;
  double frac = 0;
  if (eat(t, ':')) {
    if (!read_int(t, &sec, 2)) return false;
    if (!t.empty() && (t.front() == '.' || t.front() == ',')) {
      t.remove_prefix(1);
      double scale = 0.1;
      while (!t.empty() && is_digit(t.front())) {
        frac += (t.front() - '0') * scale;
        scale /= 10;
        t.remove_prefix(1);
      }
    }
  }
  *secs = h * 3600.0 + m * 60.0 + sec + frac;
  s = t;
  return true;
}

// "2025-11-24T03:20:21.001Z", "2025-02-18 12:54", "2024-11-28T07:42:11.525+02:00",
// "2025/11/24 03:20:21", Python logging's "2025-11-24 03:20:21,123".
bool read_iso_time(sv& s, double* epoch_s) {
  sv t = s;
  long y, mo, d;
  // A four-digit year: "10-12-3-162:7992:8059" is a host named after its address, not 10-12-3.
  if (t.size() < 10 || !read_int(t, &y, 4) || s.size() - t.size() != 4 || t.empty() ||
      (t.front() != '-' && t.front() != '/'))
    return false;
  const char sep = t.front();  // "2025-11-24", or Go's and many loggers' "2025/11/24"
  t.remove_prefix(1);
  if (!read_int(t, &mo, 2) || !eat(t, sep) || !read_int(t, &d, 2)) return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return false;
  double secs = 0;
  if (!t.empty() && (t.front() == 'T' || t.front() == ' ')) {
    sv c = t.substr(1);
    if (read_clock(c, &secs)) t = c;
  }
  if (eat(t, 'Z')) {
  } else if (!t.empty() && (t.front() == '+' || t.front() == '-') && t.size() >= 3 &&
             is_digit(t[1])) {
    const double sign = t.front() == '+' ? -1 : 1;  // 12:00+02:00 is 10:00Z
    t.remove_prefix(1);
    long oh = 0, om = 0;
    read_int(t, &oh, 2);
    eat(t, ':');
    read_int(t, &om, 2);
    secs += sign * (oh * 3600.0 + om * 60.0);
  }
  *epoch_s = days_from_civil(y, mo, d) * 86400.0 + secs;
  s = t;
  return true;
}

// glog: "E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607" or "E ProcessGroupNCCL.cpp:458"
// (the bracket already removed). Month-day time without a year.
bool read_glog_head(sv body, LineOrigin& o) {
  if (body.size() < 3) return false;
  const char sev = body.front();
  if (sev != 'E' && sev != 'W' && sev != 'I' && sev != 'F') return false;
  sv t = body.substr(1);
  if (!t.empty() && is_digit(t.front())) {
    long mmdd;
    if (!read_int(t, &mmdd, 4) || !eat(t, ' ')) return false;
    double secs;
    if (!read_clock(t, &secs)) return false;
    o.time_s = ((mmdd / 100) * 31 + mmdd % 100) * 86400.0 + secs;
    o.time_format = TimeFormat::kGlogNoYear;
  }
  skip_spaces(t);
  // The source file: "ProcessGroupNCCL.cpp:607", "socket.cpp:676", "debug.cpp:49".
  const size_t colon = t.find(':');
  return colon != sv::npos && t.substr(0, colon).find(".c") != sv::npos;
}

// ctime's "Fri Aug 11 12:31:45 2023", which Open MPI's --timestamp-output writes in front of
// its "[1,0]<stdout>:" tag.
bool read_ctime(sv& s, double* epoch_s) {
  sv t = s;
  if (t.size() < 24 || !is_alpha(t[0]) || !is_alpha(t[1]) || !is_alpha(t[2]) || t[3] != ' ')
    return false;
  const size_t m = kMonths.find(t.substr(4, 3));
  if (m == sv::npos || m % 3 != 0 || t[7] != ' ') return false;
  t.remove_prefix(8);
  skip_spaces(t);
  long d, y;
  double secs;
  if (!read_int(t, &d, 2) || !eat(t, ' ') || !read_clock(t, &secs) || !eat(t, ' ') ||
      !read_int(t, &y, 4))
    return false;
  *epoch_s = days_from_civil(y, static_cast<long>(m / 3 + 1), d) * 86400.0 + secs;
  s = t;
  return true;
}

// syslog's and journald's "Nov 24 03:20:21" (journalctl's default short format): month-day time
// without a year, comparable with glog's.
bool read_syslog_time(sv& s, LineOrigin& o) {
  sv t = s;
  if (t.size() < 15 || !is_alpha(t[0]) || t[3] != ' ') return false;
  const size_t m = kMonths.find(t.substr(0, 3));
  if (m == sv::npos || m % 3 != 0) return false;
  t.remove_prefix(4);
  skip_spaces(t);
  long d;
  double secs;
  if (!read_int(t, &d, 2) || !eat(t, ' ') || !read_clock(t, &secs)) return false;
  if (t.empty() || t.front() != ' ') return false;
  o.time_s = ((static_cast<long>(m / 3) + 1) * 31 + d) * 86400.0 + secs;
  o.time_format = TimeFormat::kGlogNoYear;
  s = t;
  return true;
}

}  // namespace fabkit::nccl_log
