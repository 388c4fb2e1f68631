// Hand-written scanning, not std::regex: the splitter runs on every line of logs that reach
// hundreds of MB, and the budget is 50 ms per MB (docs/nccl-log.md); std::regex costs microseconds
// per call and recurses on long lines.
#include "fabric/nccl_log/nccl_log_line.h"

#include <cctype>

#include "fabric/nccl_log/nccl_log_scan.h"
#include "fabric/nccl_log/nccl_log_time.h"

namespace fabkit::nccl_log {

bool is_host_pid_tid(std::string_view tok) {
  const size_t c2 = tok.rfind(':');
  if (c2 == std::string_view::npos || c2 + 1 >= tok.size()) return false;
  const size_t c1 = tok.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos || c1 == 0 || c2 - c1 < 2) return false;
  for (size_t i = c1 + 1; i < tok.size(); ++i)
    if (i != c2 && !scan::is_digit(tok[i])) return false;
  return true;
}

namespace {

using namespace scan;

// NCCL's source location alone: "include/socket.h:344", "transport/net_ib.cu:781".
bool is_source_location(sv tok) {
  const size_t colon = tok.rfind(':');
  if (colon == sv::npos || colon + 1 >= tok.size() || tok.find(' ') != sv::npos) return false;
  for (size_t i = colon + 1; i < tok.size(); ++i)
    if (!is_digit(tok[i])) return false;
  const sv file = tok.substr(0, colon);
  const size_t dot = file.rfind('.');
  if (dot == sv::npos) return false;
  const sv ext = file.substr(dot + 1);
  return ext == "h" || ext == "c" || ext == "cc" || ext == "cu" || ext == "cpp";
}

// "host:pid:tid" (NCCL's prefix) -> host and pid.
bool split_host_pid_tid(sv tok, LineOrigin& o) {
  if (!is_host_pid_tid(tok)) return false;
  const size_t c2 = tok.rfind(':');
  const size_t c1 = tok.rfind(':', c2 - 1);
  o.host = std::string(tok.substr(0, c1));
  sv p = tok.substr(c1 + 1, c2 - c1 - 1);
  long pid;
  if (read_int(p, &pid)) o.pid = pid;
  return true;
}

// The part before "NCCL INFO"/"NCCL WARN": "host:pid:tid [dev] [file.cc:N]" or "host [dev]".
void parse_nccl_prefix(sv head, LogLine& out) {
  skip_spaces(head);
  // A word some viewer put before NCCL's prefix ("pytorch card-16-...:22789:28201 [0] ..."):
  // NCCL's own host:pid:tid is the token before the "[dev]".
  for (size_t sp = head.find(' '); sp != sv::npos && sp + 1 < head.size();
       sp = head.find(' ', sp + 1)) {
    const sv next = head.substr(sp + 1);
    LineOrigin probe;
    if (split_host_pid_tid(head.substr(0, sp), probe)) break;
    const size_t sp2 = next.find(' ');
    if (split_host_pid_tid(next.substr(0, sp2), probe) && sp2 != sv::npos &&
        next.substr(sp2 + 1, 1) == "[") {
      head = next;
      break;
    }
  }
  const size_t sp = head.find(' ');
  sv first = head.substr(0, sp);
  sv rest = sp == sv::npos ? sv() : head.substr(sp + 1);
  if (!split_host_pid_tid(first, out.origin)) {
    // "graph/topo.h:230 NCCL WARN ...": a quote kept NCCL's source location without the host.
    if (is_source_location(first) && rest.empty()) {
      out.nccl_file = first;
      return;
    }
    // "host:XXXXXX" or "host:xxx:xxx": a poster masked the pid and tid; host names have no ':'.
    // "[Node-A]:[PID]:[Thread]": all three masked, the host by a placeholder that still names it.
    if (!first.empty() && (first.front() != '[' || first.find("]:[") != sv::npos))
      out.origin.host = std::string(first.substr(0, first.find(':')));
    else
      rest = head;
  }
  skip_spaces(rest);
  if (eat(rest, '[')) {
    long dev;
    if (read_int(rest, &dev, 4) && eat(rest, ']')) out.origin.cuda_dev = static_cast<int>(dev);
  }
  skip_spaces(rest);
  while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
  if (!rest.empty() && rest.find(' ') == sv::npos) out.nccl_file = rest;
}

// "[Node-A]:[PID]:[Thread] [0] NCCL WARN": NCCL's host:pid:tid with each part masked by the
// poster, not a launcher's "[trainer0]:" tag (nor torchrun's "[default5]:[rank5]:[E1126 ...]").
bool masked_host_pid_tid(sv s) {
  for (int part = 0; part < 3; ++part) {
    if (part > 0 && !eat(s, ':')) return false;
    const size_t close = s.find(']');
    if (s.empty() || s.front() != '[' || close == sv::npos || close > 64) return false;
    const sv body = s.substr(1, close - 1);
    if (body.empty() || body.find(' ') != sv::npos) return false;
    if (part == 1 && (starts_with(body, "rank") || starts_with(body, "Rank"))) return false;
    s.remove_prefix(close + 1);
  }
  return starts_with(s, " [");
}

// One launcher/collector prefix removed from the front of `s`; false when none is there.
bool strip_one_prefix(sv& s, LineOrigin& o, bool* torch) {
  skip_spaces(s);
  if (s.empty()) return false;
  if (s.front() == '\x1b') {  // an ANSI escape: ESC [ params letter
    size_t i = 1;
    if (i < s.size() && s[i] == '[') ++i;
    while (i < s.size() && !std::isalpha(static_cast<unsigned char>(s[i]))) ++i;
    s.remove_prefix(std::min(i + 1, s.size()));
    return true;
  }
  if (starts_with(s, "[0m") || starts_with(s, "[m ")) {  // ANSI residue a copy kept
    s.remove_prefix(s[1] == '0' ? 3 : 2);
    return true;
  }
  // A Markdown or mail quote ("> node201:127799:127863 [0] ..."): a log pasted as a quote.
  if (s.front() == '>' && (s.size() == 1 || s[1] == ' ')) {
    s.remove_prefix(1);
    return true;
  }
  if (s.front() == '`') {  // Markdown inline code: a block pasted between single backticks
    s.remove_prefix(1);
    return true;
  }
  if (starts_with(s, "**")) {  // Markdown bold around a pasted line ("**hvd1:2918:3333 [0] ...**")
    s.remove_prefix(2);
    return true;
  }
  // Markdown italics around a pasted block ("_worker0-0d9gnb:15:91 [3] ... NCCL WARN ..."); host
  // names do not start with '_'.
  if (s.front() == '_' && s.size() > 1 && std::isalnum(static_cast<unsigned char>(s[1]))) {
    s.remove_prefix(1);
    return true;
  }
  if (s.front() == '|') {  // CloudWatch / kubectl table cells
    s.remove_prefix(1);
    return true;
  }
  if (is_alpha(s.front())) {
    sv t = s;
    double secs;
    if (read_ctime(t, &secs)) {
      o.time_s = secs;
      o.time_format = TimeFormat::kAbsolute;
      s = t;
      return true;
    }
    if (read_syslog_time(t, o)) {  // journalctl / syslog "Nov 24 03:20:21 "
      s = t;
      return true;
    }
  }
  // Ray's "(train_rft pid=2657296) ", "(pid=909608) ", "(RayWorkerVllm pid=207931,
  // ip=10.0.1.75) " and vLLM's "(VllmWorker rank=3 pid=4665) " in front of a worker's output:
  // the node's address and the worker's rank say who it is.
  if (s.front() == '(') {
    const size_t close = s.find(')');
    const size_t pid = starts_with(s, "(pid=") ? 0 : s.find(" pid=");
    if (close != sv::npos && close < 200 && pid != sv::npos && pid < close) {
      const sv body = s.substr(1, close - 1);
      const size_t rk = body.find("rank=");
      if (rk != sv::npos && (rk == 0 || body[rk - 1] == ' ')) {
        sv r = body.substr(rk + 5);
        long n;
        if (read_int(r, &n, 6)) o.rank = static_cast<int>(n);
      }
      const size_t ip = body.find("ip=");
      if (ip != sv::npos && o.host.empty()) {
        size_t e = ip + 3;
        while (e < body.size() && body[e] != ',' && body[e] != ' ') ++e;
        o.host = std::string(body.substr(ip + 3, e - ip - 3));
      }
      s.remove_prefix(close + 1);
      return true;
    }
  }
  {  // NeMo-Run/torchx's "role/replica " before torchrun's "[default1]:" tag
    size_t i = 0;
    while (i < s.size() && i < 128 && is_name_char(s[i])) ++i;
    if (i > 0 && i + 3 < s.size() && s[i] == '/') {
      size_t j = i + 1;
      while (j < s.size() && is_digit(s[j])) ++j;
      if (j > i + 1 && j + 1 < s.size() && s[j] == ' ' && s[j + 1] == '[') {
        s.remove_prefix(j + 1);
        return true;
      }
    }
  }
  if (is_digit(s.front())) {
    sv t = s;
    double secs;
    if (read_iso_time(t, &secs)) {
      o.time_s = secs;
      o.time_format = TimeFormat::kAbsolute;
      eat(t, ':');  // a collector's "2019-06-02T16:13:44.884Z: " separator
      s = t;
      return true;
    }
    long n;
    t = s;
    if (read_int(t, &n, 6) && starts_with(t, ": ")) {  // srun --label: "0: "
      o.rank = static_cast<int>(n);
      s = t.substr(2);
      return true;
    }
  }
  if (s.front() == '[') {
    const size_t close = s.find(']');
    if (close == sv::npos || close > 200) return false;
    sv body = s.substr(1, close - 1);
    sv after = s.substr(close + 1);
    // [1,3]<stdout>: (Open MPI --tag-output), [1]<stderr>: (horovodrun: the rank alone)
    const size_t comma = body.find(',');
    if (starts_with(after, "<stdout>:") || starts_with(after, "<stderr>:")) {
      sv r = comma == sv::npos ? body : body.substr(comma + 1);
      long n;
      if (read_int(r, &n, 6)) o.rank = static_cast<int>(n);
      s = after.substr(9);
      return true;
    }
    if (starts_with(body, "rank") || starts_with(body, "Rank ")) {  // [rank13]: / [Rank 3]
      sv r = body.substr(body[4] == ' ' ? 5 : 4);
      long n;
      if (read_int(r, &n, 6) && r.empty()) {
        o.rank = static_cast<int>(n);
        s = after;
        eat(s, ':');
        return true;
      }
    }
    if (starts_with(body, "PG ")) {  // PyTorch: [PG ID 2 PG GUID 9 Rank 4] / [PG 1 Rank 0]
      const size_t rk = body.rfind("Rank ");
      if (rk != sv::npos) {
        sv r = body.substr(rk + 5);
        long n;
        if (read_int(r, &n, 6)) o.rank = static_cast<int>(n);
      }
      s = after;
      *torch = true;
      return true;
    }
    sv t = body;
    double secs;
    if (read_iso_time(t, &secs)) {  // [2025-11-24 11:20:21]
      o.time_s = secs;
      o.time_format = TimeFormat::kAbsolute;
      s = after;
      return true;
    }
    if (read_glog_head(body, o)) {
      *torch = true;
      s = after;
      return true;
    }
    t = body;
    long n;
    if (read_int(t, &n, 9) && t.empty()) {  // [56] host:pid:tid ... (a launcher's rank tag)
      if (after.empty() || after.front() == ' ') {
        o.rank = static_cast<int>(n);
        s = after;
        return true;
      }
      return false;
    }
    if (starts_with(after, ":") && !masked_host_pid_tid(s) && body.find(' ') == sv::npos &&
        !body.empty()) {
      o.label = std::string(body.substr(0, body.find('|')));  // [trainer0|0]: (torchx roles)
      s = after.substr(1);
      return true;
    }
    // kubectl logs --prefix: "[pod/trainer-worker-0/pytorch] ".
    if (starts_with(body, "pod/") && body.find(' ') == sv::npos && starts_with(after, " ")) {
      o.label = std::string(body.substr(4));
      s = after;
      return true;
    }
    t = body;
    if (read_clock(t, &secs) && t.empty()) {  // "[03:20:21] ": a time of day alone orders nothing
      s = after;
      return true;
    }
    return false;
  }
  // pdsh/clush "host: " in front of an NCCL line.
  size_t i = 0;
  while (
      i < s.size() && i < 128 &&
      (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == '-' || s[i] == '_'))
    ++i;
  const sv token = s.substr(0, i);
  {  // docker compose "trainer-1  | " (the service's name padded to the widest one)
    size_t j = i;
    while (j < s.size() && s[j] == ' ') ++j;
    if (i > 0 && j > i && j + 1 < s.size() && s[j] == '|' && s[j + 1] == ' ') {
      o.label = std::string(token);
      s.remove_prefix(j + 2);
      return true;
    }
  }
  {  // journald/syslog's "host tag[pid]: " after its time ("gpu-a1 python[4021]: ")
    sv t = s.substr(i);
    size_t k = 1;
    if (i > 0 && eat(t, ' ')) {
      while (k <= t.size() && k < 128 && is_name_char(t[k - 1])) ++k;
      sv rest = t.substr(k - 1);
      long pid;
      if (k > 1 && eat(rest, '[') && read_int(rest, &pid, 9) && eat(rest, ']') &&
          starts_with(rest, ": ")) {
        if (o.host.empty()) o.host = std::string(token);
        s = rest.substr(2);
        return true;
      }
    }
  }
  // Not a Python exception's class ("RuntimeError: NCCL error in: ...").
  const auto ends_with = [&](sv suffix) {
    return token.size() > suffix.size() && token.substr(token.size() - suffix.size()) == suffix;
  };
  const bool exception_name = ends_with("Error") || ends_with("Exception");
  if (i > 0 && i + 1 < s.size() && s[i] == ':' && s[i + 1] == ' ' && token != "WARN" &&
      token != "INFO" && !exception_name &&
      (s.find("NCCL ", i) != sv::npos || s.find("Test CUDA failure", i) != sv::npos ||
       s.find("NET/OFI", i) != sv::npos ||
       // PyTorch's C++ frames ("frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout"), an
       // exception's "node2: Last error:" before NCCL's text.
       s.find("ProcessGroupNCCL", i) != sv::npos || s.find("Last error:", i) == i + 2)) {
    if (o.host.empty()) o.host = std::string(s.substr(0, i));
    s.remove_prefix(i + 2);
    return true;
  }
  return false;
}

// Ray's log deduplication appends " [repeated 15x across cluster]" to a line that several
// workers printed; the words are Ray's, not NCCL's (a network name read up to the line's end
// would keep them).
void strip_ray_repeat_suffix(sv& msg) {
  constexpr sv kTail = "x across cluster]";
  if (msg.size() < kTail.size() || msg.substr(msg.size() - kTail.size()) != kTail) return;
  const size_t open = msg.rfind(" [repeated ");
  if (open == sv::npos) return;
  for (size_t i = open + 11; i < msg.size() - kTail.size(); ++i)
    if (!is_digit(msg[i])) return;
  msg = msg.substr(0, open);
}

// NCCL 1.x printed "WARN src/core.cu:487 rank 1 failed to copy maps to device" and "INFO rank 0
// using buffSize = 2097152" with no host, pid or device (its debug.h). A bare "INFO" opens many
// other programs' lines (vLLM's "INFO 04-07 ..."), so only NCCL 1's own INFO texts (src/core.cu,
// src/libwrap.cu) are read as its.
void nccl1_line(sv s, LogLine& out) {
  if (starts_with(s, "WARN ")) {
    sv rest = s.substr(5);
    const size_t sp = rest.find(' ');
    if (sp == sv::npos || !is_source_location(rest.substr(0, sp))) return;
    out.source = LineSource::kNcclWarn;
    out.nccl_file = rest.substr(0, sp);
    out.msg = rest.substr(sp + 1);
    return;
  }
  if (!starts_with(s, "INFO ")) return;
  const sv rest = s.substr(5);
  for (sv head : {sv("NCCL debug level"), sv("rank "), sv("Global device memory space"),
                  sv("peer query failed"), sv("ncclComm "), sv("commFree "),
                  sv("failed to cleanup comm maps"), sv("NCCL did not shutdown")})
    if (starts_with(rest, head)) {
      out.source = LineSource::kNcclInfo;
      out.msg = rest;
      return;
    }
}

}  // namespace

LogLine split_log_line(std::string_view line) {
  LogLine out;
  sv s = line;
  bool torch = false;
  for (int guard = 0; guard < 8 && strip_one_prefix(s, out.origin, &torch); ++guard) {
  }
  skip_spaces(s);
  const std::string pdsh_host = out.origin.host;  // a collector's host tag, overridden by NCCL's
  out.origin.host.clear();
  for (sv tag : {sv("NCCL INFO"), sv("NCCL WARN")}) {
    const size_t p = s.find(tag);
    if (p == sv::npos) continue;
    if (p + tag.size() < s.size() && s[p + tag.size()] != ' ') continue;
    out.source = tag[5] == 'W' ? LineSource::kNcclWarn : LineSource::kNcclInfo;
    if (p > 0) parse_nccl_prefix(s.substr(0, p), out);
    out.msg = s.substr(std::min(s.size(), p + tag.size() + 1));
    skip_spaces(out.msg);
    break;
  }
  // aws-ofi-nccl's own test binaries log "WARN: Function: f Line: N: NET/OFI ..." without NCCL.
  for (sv tag : {sv("WARN: Function: "), sv("INFO: Function: ")}) {
    if (out.source != LineSource::kOther || !starts_with(s, tag)) continue;
    const size_t line_tag = s.find(" Line: ");
    const size_t colon = line_tag == sv::npos ? sv::npos : s.find(": ", line_tag + 7);
    if (colon == sv::npos) continue;
    out.source = tag[0] == 'W' ? LineSource::kNcclWarn : LineSource::kNcclInfo;
    out.msg = s.substr(colon + 2);
  }
  if (out.source == LineSource::kOther) {
    // NCCL 2.2-2.3 wrote "host:pid:tid [dev] INFO msg" / "file.h:344 WARN msg"; a quote often
    // keeps only "transport/net_ib.cu:781 WARN msg", without the host and device.
    for (sv tag : {sv(" INFO "), sv(" WARN ")}) {
      const size_t p = s.find(tag);
      if (p == sv::npos || p == 0) continue;
      const sv head = s.substr(0, p);
      const bool source_only = tag[1] == 'W' && is_source_location(head);
      if (head.find(']') == sv::npos && !source_only) continue;
      out.source = tag[1] == 'W' ? LineSource::kNcclWarn : LineSource::kNcclInfo;
      if (source_only)
        out.nccl_file = head;
      else
        parse_nccl_prefix(head, out);
      out.msg = s.substr(p + tag.size());
      break;
    }
  }
  if (out.source == LineSource::kOther) nccl1_line(s, out);
  if (out.source == LineSource::kOther) {
    out.msg = s;
    // PyTorch's glog line behind a progress bar or other text on the same line.
    if (!torch && s.find("ProcessGroupNCCL.cpp") != sv::npos) torch = true;
    if (torch) out.source = LineSource::kTorch;
  }
  if (out.origin.host.empty()) out.origin.host = pdsh_host;
  while (!out.msg.empty() &&
         (out.msg.back() == ' ' || out.msg.back() == '\r' || out.msg.back() == '\t'))
    out.msg.remove_suffix(1);
  strip_ray_repeat_suffix(out.msg);
  if (out.msg.size() >= 2 && out.msg.substr(out.msg.size() - 2) == "**") out.msg.remove_suffix(2);
  return out;
}

std::optional<int> rank_in_text(std::string_view s) {
  // PyTorch's tags: "what():  [PG 3 Rank 5] ... [Rank 5] Watchdog ...", "[PG ID 2 PG GUID 3
  // Rank 0] ProcessGroupNCCL's watchdog got stuck".
  size_t at = sv::npos;
  const size_t pg = s.find("[PG ");
  if (pg != sv::npos) {
    const size_t close = s.find(']', pg);
    const size_t rk = s.find(" Rank ", pg);
    if (rk != sv::npos && rk < close) at = rk + 6;
  }
  if (at == sv::npos) {
    const size_t rk = s.find("[Rank ");
    if (rk != sv::npos) at = rk + 6;
  }
  long n;
  if (at != sv::npos) {
    sv r = s.substr(at);
    if (read_int(r, &n, 6) && starts_with(r, "]")) return static_cast<int>(n);
  }
  // c10d's store wait: "DistBackendError: [4] is setting up NCCL communicator and retrieving
  // ncclUniqueId from [0] via c10d key-value store ...": the rank that waited.
  const size_t setup = s.find("] is setting up NCCL communicator");
  const size_t open = setup == sv::npos ? sv::npos : s.rfind('[', setup);
  if (open != sv::npos) {
    sv r = s.substr(open + 1, setup - open - 1);
    if (read_int(r, &n, 6) && r.empty()) return static_cast<int>(n);
  }
  return std::nullopt;
}

}  // namespace fabkit::nccl_log
