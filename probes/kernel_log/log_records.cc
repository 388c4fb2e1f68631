// Kernel log records from /dev/kmsg's record format or from `dmesg` text, and --since. Pure.
//
// /dev/kmsg (Documentation/ABI/testing/dev-kmsg): one record per read, "prio,seq,usec,flags;" +
// message + "\n", then optional " KEY=value" dictionary lines; non-printable bytes in the message
// (a multi-line record's newlines among them) are escaped as \xNN. prio is (facility << 3) |
// level, and the facility tells the kernel's records (0, LOG_KERN) from user space's writes.
// dmesg text: "[  123.456789] message" (util-linux's default), "<6>[  123.456789] message"
// (dmesg -r: the raw prio again), "kern  :info  : [  123.456789] message" (dmesg -x),
// "[Thu Oct 22 08:55:04 2020] message" (dmesg -T), "[  +0.000316] message" (dmesg
// -d/-H), "[  36.764462][  T291] message" (CONFIG_PRINTK_CALLER), "kern  :err   :
// 2025-01-21T04:41:44,283302+00:00 message" (dmesg --decode --time-format iso, either part
// alone too); syslog/journal copies put "Mon DD HH:MM:SS host kernel: " in front (also with
// microseconds, journalctl -o short-precise, or an RFC 3339 time, -o short-iso; another tag than
// "kernel" is user space's), or "[  123.456789] host kernel: " (-o short-monotonic), pdsh
// "host: ". Wall-clock times count as times only with a year and a UTC offset (the ISO forms),
// through the boot time (place_wall_times); dmesg -T's and syslog's local times without a zone
// are no time. A multi-line record's later lines are indented and carry no stamp: they belong to
// the record above. Plain dmesg text does not say who wrote a record: there the start of the
// message (log_lines.h) is all that tells a driver's line.
#include <time.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <iterator>

#include "common/errors.h"
#include "common/file_reader.h"
#include "common/utf8_text.h"
#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/kernel_log/log_text_heads.h"

namespace fabkit::probes {
namespace {

// A message as the report can carry it: drivers print bytes (a process name, a firmware string),
// and /dev/kmsg's \xNN escapes turn back into those bytes; the JSON writer throws on any that
// are not UTF-8. Most lines are ASCII, so they are kept as they are without a second copy.
std::string as_utf8(std::string s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return utf8_clean(s);
  return s;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string unescape_kmsg(std::string_view s) {
  if (s.find('\\') == std::string_view::npos) return std::string(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
      int hi = hex_value(s[i + 2]), lo = hex_value(s[i + 3]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// What a "[...]" stamp says: a time since boot, or a recognised stamp without one.
enum class Stamp { kNone, kSinceBoot, kOther };

Stamp read_stamp(std::string_view inner, double* seconds) {
  std::string_view t = inner;
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  if (t.empty()) return Stamp::kNone;
  // "123.456789": seconds since boot.
  size_t dot = t.find('.');
  if (dot != std::string_view::npos && all_digits(t.substr(0, dot)) &&
      all_digits(t.substr(dot + 1))) {
    *seconds = std::strtod(std::string(t).c_str(), nullptr);
    return Stamp::kSinceBoot;
  }
  // "+0.000316" (dmesg -d/-H deltas).
  if (t.front() == '+' && t.find('.') != std::string_view::npos) return Stamp::kOther;
  auto alpha3 = [&](size_t at) {
    return t.size() >= at + 3 && std::isalpha(static_cast<unsigned char>(t[at])) &&
           std::isalpha(static_cast<unsigned char>(t[at + 1])) &&
           std::isalpha(static_cast<unsigned char>(t[at + 2]));
  };
  // "Thu Oct 22 08:55:04 2020" (dmesg -T): exactly ctime's layout, so "[drm:foo]" is no stamp.
  if (t.size() == 24 && alpha3(0) && alpha3(4) && t[3] == ' ' && t[7] == ' ' && t[13] == ':' &&
      t[16] == ':' && all_digits(t.substr(20)))
    return Stamp::kOther;
  // "Oct22 08:55" (dmesg -H, the first record of a minute).
  if ((t.size() == 11 || t.size() == 12) && alpha3(0) && t[t.size() - 3] == ':' &&
      t[t.size() - 6] == ' ')
    return Stamp::kOther;
  return Stamp::kNone;
}

// A caller id after the stamp: "[  T291]" or "[    C3]".
std::string_view skip_caller(std::string_view s) {
  if (s.size() < 3 || s.front() != '[') return s;
  size_t close = s.find(']');
  if (close == std::string_view::npos || close > 12) return s;
  std::string_view in = s.substr(1, close - 1);
  while (!in.empty() && in.front() == ' ') in.remove_prefix(1);
  if (in.size() < 2 || (in[0] != 'T' && in[0] != 'C') || !all_digits(in.substr(1))) return s;
  s.remove_prefix(close + 1);
  if (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// "<14>" (dmesg -r, or a syslog prio): the facility, prio >> 3.
std::optional<int> raw_prio_facility(std::string_view s) {
  if (s.size() < 3 || s.front() != '<' || s.back() != '>') return std::nullopt;
  std::string_view digits = s.substr(1, s.size() - 2);
  if (!all_digits(digits) || digits.size() > 4) return std::nullopt;
  return std::atoi(std::string(digits).c_str()) >> 3;
}

// What stands before a dmesg stamp: "<6>" (dmesg -r) or "kern  :info  : " (dmesg -x, util-linux's
// facility names); nullopt for anything else (nothing, a pdsh "host: ").
std::optional<int> stamp_prefix_facility(std::string_view prefix) {
  while (!prefix.empty() && prefix.back() == ' ') prefix.remove_suffix(1);
  if (auto f = raw_prio_facility(prefix)) return f;
  if (prefix.empty() || prefix.back() != ':') return std::nullopt;
  const size_t colon = prefix.find(':');
  if (colon == prefix.size() - 1) return std::nullopt;
  return facility_number(prefix.substr(0, colon));
}

// A syslog line's head: "Mar 27 15:37:34 cc1 kernel: " or "2024-05-18T19:02:39.1+00:00 cc1
// kernel: " (the host may be missing). The tag is its last word; *message_at gets where the
// message starts (in the whole line), *unix_s the time when it has a year and a UTC offset.
// nullopt when the line does not start with such a time.
std::optional<std::string_view> syslog_tag_at(std::string_view line, size_t* message_at,
                                              std::optional<double>* unix_s);

// The same after pdsh's "host: ", if there is one.
std::optional<std::string_view> syslog_tag(std::string_view line, size_t* message_at,
                                           std::optional<double>* unix_s) {
  if (auto tag = syslog_tag_at(line, message_at, unix_s)) return tag;
  const size_t c = line.find(": ");
  if (c == std::string_view::npos || c == 0 || c > 64 ||
      line.substr(0, c).find(' ') != std::string_view::npos)
    return std::nullopt;
  auto tag = syslog_tag_at(line.substr(c + 2), message_at, unix_s);
  if (tag) *message_at += c + 2;
  return tag;
}

std::optional<std::string_view> syslog_tag_at(std::string_view line, size_t* message_at,
                                              std::optional<double>* unix_s) {
  auto digit = [&](size_t i) {
    return i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]));
  };
  size_t at;
  if (line.size() > 16 && std::isupper(static_cast<unsigned char>(line[0])) && line[3] == ' ' &&
      line[6] == ' ' && line[9] == ':' && line[12] == ':' && digit(7) && digit(8) && digit(13) &&
      digit(14)) {
    // "Mmm dd hh:mm:ss " (no year, no zone: no time), or with microseconds (journalctl -o
    // short-precise).
    at = 15;
    if (line[at] == '.')
      while (++at < line.size() && std::isdigit(static_cast<unsigned char>(line[at]))) {
      }
    if (at >= line.size() || line[at] != ' ') return std::nullopt;
    ++at;
  } else if (line.size() > 20 && digit(0) && digit(3) && line[4] == '-' && line[7] == '-' &&
             (line[10] == 'T' || line[10] == ' ') && line[13] == ':') {
    at = line.find(' ', 11);
    if (at == std::string_view::npos) return std::nullopt;
    size_t used = 0;
    bool comma = false;
    if (auto t = iso_time(line, &used, &comma); t && used == at) *unix_s = t;
    ++at;
  } else {
    return std::nullopt;
  }
  // One or two words, the last ending in ':' followed by a blank.
  for (int words = 0; words < 2; ++words) {
    size_t sp = line.find(' ', at);
    if (sp == std::string_view::npos) return std::nullopt;
    if (sp > at && line[sp - 1] == ':') {
      *message_at = sp + 1;
      return line.substr(at, sp - 1 - at);
    }
    at = sp + 1;
  }
  return std::nullopt;
}

// One dmesg-style line: the record it starts (stamp found or a plain message), or nullopt for a
// continuation line (indented, no stamp).
struct TextLine {
  bool continuation = false;
  KernelLogRecord record;
};

TextLine parse_text_line(std::string_view line) {
  TextLine out;
  if (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
    size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] != '[') {
      out.continuation = true;
      out.record.message = std::string(line.substr(first == std::string_view::npos ? 0 : first));
      return out;
    }
  }
  // dmesg --decode's "kern  :err   : " and --time-format iso's time ("2025-01-21T04:41:44,283302
  // +00:00", the comma telling it from a syslog time, which a host and tag follow), together or
  // each alone. After a decode prefix, a "[stamp]" is read below with the prefix.
  std::string_view body = line;
  const std::optional<int> decoded = decode_prefix(line, &body);
  size_t used = 0;
  bool comma = false;
  if (auto t = iso_time(body, &used, &comma); t && comma) {
    out.record.unix_s = t;
    out.record.facility = decoded;
    body.remove_prefix(used);
    if (!body.empty()) body.remove_prefix(1);
    out.record.message = std::string(body);
    return out;
  }
  if (decoded && (body.empty() || body.front() != '[')) {
    out.record.facility = decoded;
    out.record.message = std::string(body);
    return out;
  }
  // The first "[stamp]" in the line's head, after any prefix (syslog, pdsh, "<6>").
  const size_t head = std::min<size_t>(line.size(), 100);
  for (size_t open = line.find('['); open != std::string_view::npos && open < head;
       open = line.find('[', open + 1)) {
    size_t close = line.find(']', open);
    if (close == std::string_view::npos) break;
    double s = 0;
    Stamp st = read_stamp(line.substr(open + 1, close - open - 1), &s);
    if (st == Stamp::kNone) continue;
    std::string_view rest = line.substr(close + 1);
    if (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    rest = skip_caller(rest);
    if (st == Stamp::kSinceBoot) out.record.time_s = s;
    out.record.facility = stamp_prefix_facility(line.substr(0, open));
    // journalctl -o short-monotonic: "[  123.456789] host kernel: message".
    size_t k = rest.find(" kernel: ");
    if (k != std::string_view::npos && rest.substr(0, k).find(' ') == std::string_view::npos) {
      rest.remove_prefix(k + 9);
      out.record.facility = 0;
    }
    out.record.message = std::string(rest);
    return out;
  }
  // No stamp: a syslog or journal line ("Mar 27 15:37:34 cc1 kernel: mlx5_core ..."), whose tag
  // says who wrote it; "kernel: message" (a journal line without its time); "<6>message"; or a
  // bare message.
  size_t at = 0;
  if (auto tag = syslog_tag(line, &at, &out.record.unix_s)) {
    out.record.facility = *tag == "kernel" ? 0 : 1;
    out.record.message = std::string(line.substr(at));
  } else if (line.substr(0, 8) == "kernel: ") {
    out.record.facility = 0;
    out.record.message = std::string(line.substr(8));
  } else if (size_t close = line.find('>'); close != std::string_view::npos && close < 6 &&
                                            raw_prio_facility(line.substr(0, close + 1))) {
    out.record.facility = raw_prio_facility(line.substr(0, close + 1));
    out.record.message = std::string(line.substr(close + 1));
  } else {
    out.record.message = std::string(line);
  }
  return out;
}

// The header of a kmsg record, "prio,seq,usec,flags[,...];": parsed without allocating (a node's
// log has tens of thousands of records, and this runs on each).
struct KmsgHeader {
  uint64_t prio = 0, seq = 0, usec = 0;
  size_t message_at = 0;  // after the ';'
};

std::optional<KmsgHeader> kmsg_header(std::string_view line) {
  size_t semi = line.find(';');
  if (semi == std::string_view::npos || semi > 64) return std::nullopt;
  uint64_t fields[3] = {0, 0, 0};
  size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    size_t end = line.find(',', at);
    if (end == std::string_view::npos || end > semi) return std::nullopt;
    auto [p, ec] = std::from_chars(line.data() + at, line.data() + end, fields[i]);
    if (ec != std::errc() || p != line.data() + end || end == at) return std::nullopt;
    at = end + 1;
  }
  return KmsgHeader{fields[0], fields[1], fields[2], semi + 1};
}

bool looks_like_kmsg(std::string_view line) { return kmsg_header(line).has_value(); }

}  // namespace

std::optional<KernelLogRecord> parse_kmsg_record(std::string_view raw, uint64_t* seq) {
  std::string_view line = raw.substr(0, raw.find('\n'));
  auto h = kmsg_header(line);
  if (!h) return std::nullopt;
  KernelLogRecord r;
  r.time_s = static_cast<double>(h->usec) / 1e6;
  r.facility = static_cast<int>((h->prio >> 3) & 0xff);  // LOG_FACILITY in printk.c
  if (seq) *seq = h->seq;
  r.message = as_utf8(unescape_kmsg(line.substr(h->message_at)));
  return r;
}

std::vector<KernelLogRecord> parse_kernel_log_text(const std::string& text, std::string* format) {
  std::vector<KernelLogRecord> out;
  int kmsg = 0, dmesg = 0;
  bool in_kmsg_record = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (looks_like_kmsg(line)) {
      if (auto r = parse_kmsg_record(line)) {
        out.push_back(std::move(*r));
        ++kmsg;
        in_kmsg_record = true;
        continue;
      }
    }
    // " SUBSYSTEM=pci" after a kmsg record is its dictionary, not text.
    if (in_kmsg_record && line.front() == ' ') continue;
    in_kmsg_record = false;
    TextLine t = parse_text_line(line);
    t.record.message = as_utf8(std::move(t.record.message));
    if (t.continuation && !out.empty()) {
      out.back().message += "\n" + t.record.message;
      continue;
    }
    out.push_back(std::move(t.record));
    ++dmesg;
  }
  if (format) *format = kmsg == 0 && dmesg == 0 ? "" : kmsg >= dmesg ? "kmsg" : "dmesg";
  return out;
}

KernelLogSince parse_since(const std::string& text) {
  KernelLogSince s;
  s.text = text;
  const std::string bad =
      "--since '" + text +
      "': expected a duration before now (2h, 90m, 1d12h, 45s) or an RFC 3339 time "
      "(2026-11-26T08:00:00Z, 2026-11-26T10:00:00+02:00)";
  if (text.empty()) throw UsageError(bad);
  // Durations: one or more <number><unit>.
  if (std::isdigit(static_cast<unsigned char>(text[0])) && text.find('-') == std::string::npos &&
      text.find(':') == std::string::npos) {
    double total = 0;
    size_t i = 0;
    while (i < text.size()) {
      size_t j = i;
      while (j < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.'))
        ++j;
      if (j == i || j >= text.size()) throw UsageError(bad);
      double n = std::strtod(text.substr(i, j - i).c_str(), nullptr);
      const char unit = text[j];
      const double mult = unit == 's'   ? 1
                          : unit == 'm' ? 60
                          : unit == 'h' ? 3600
                          : unit == 'd' ? 86400
                                        : 0;
      if (mult == 0 || !std::isfinite(n)) throw UsageError(bad);
      total += n * mult;
      i = j + 1;
    }
    s.seconds_ago = total;
    return s;
  }
  // RFC 3339: YYYY-MM-DD[T ]HH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  struct tm tm {};
  int y, mo, d, h, mi, sec, consumed = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec,
                  &consumed) != 6 ||
      consumed != 19)
    throw UsageError(bad);
  size_t i = 19;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  }
  long offset_s = 0;
  if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
    ++i;
  } else if (i + 6 == text.size() && (text[i] == '+' || text[i] == '-') && text[i + 3] == ':') {
    int oh = std::atoi(text.substr(i + 1, 2).c_str()),
        om = std::atoi(text.substr(i + 4, 2).c_str());
    offset_s = (text[i] == '-' ? -1 : 1) * (oh * 3600L + om * 60L);
    i += 6;
  } else {
    throw UsageError(bad);
  }
  if (i != text.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
    throw UsageError(bad);
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  s.unix_time_s = static_cast<int64_t>(timegm(&tm)) - offset_s;
  return s;
}

}  // namespace fabkit::probes
