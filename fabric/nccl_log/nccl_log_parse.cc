// Reads a log line by line: who said each line (nccl_log_line.cc removes the prefixes), which
// lines are errors (nccl_log_classify.cc names them), the per-rank view, and the cause
// (nccl_log_failures.cc); NCCL's init facts and the network are nccl_log_network.cc's. Matching is
// by substring per line: a log is whatever a job printed, with other programs' output
// interleaved, so nothing here assumes a line is NCCL's.
#include <algorithm>
#include <cctype>

#include "common/utf8_text.h"
#include "fabric/nccl_log/nccl_failure_kinds.h"
#include "fabric/nccl_log/nccl_log_ib_events.h"
#include "fabric/nccl_log/nccl_log_parser.h"
#include "fabric/nccl_log/nccl_log_scan.h"
#include "fabric/nccl_log/nccl_log_text.h"

namespace fabkit::nccl_log {
namespace detail {

constexpr size_t kMaxErrors = 2000;  // kept lines; every error still counts in its failure
constexpr size_t kMaxRankViews = 4096;
constexpr int kMaxWrapLines = 6;

Process* Parser::process_of(const LogLine& l, const std::string& source) {
  const LineOrigin& o = l.origin;
  // Consecutive lines mostly come from one process: skip the map (and its key) for them.
  if (cached_ && cached_source_ == &source && o.pid == cached_pid_ && o.host == cached_host_ &&
      o.rank == cached_rank_ && o.label == cached_label_ && o.cuda_dev == cached_dev_) {
    Process& p = *cached_;
    if (p.view != SIZE_MAX) ++s_.ranks[p.view].lines;
    return &p;
  }
  Process* p = lookup_process(l, source);
  cached_ = p;
  cached_source_ = &source;
  cached_pid_ = o.pid;
  cached_host_ = o.host;
  cached_rank_ = o.rank;
  cached_label_ = o.label;
  cached_dev_ = o.cuda_dev;
  return p;
}

Process* Parser::lookup_process(const LogLine& l, const std::string& source) {
  const LineOrigin& o = l.origin;
  std::string key;
  if (!o.host.empty() && o.pid >= 0)
    key = o.host + ":" + std::to_string(o.pid);
  else if (o.rank)
    key = "rank " + std::to_string(*o.rank);
  else if (!o.host.empty())
    key = o.host + (o.cuda_dev >= 0 ? " [" + std::to_string(o.cuda_dev) + "]" : "");
  else if (!o.label.empty())
    key = o.label;
  else
    return nullptr;
  key = source + "\x1f" + key;
  auto found = processes_.find(key);
  if (found == processes_.end() && processes_.size() >= kMaxProcesses) {
    ++s_.untracked_process_lines;  // read as a line of no known process
    return nullptr;
  }
  auto [it, fresh] = found != processes_.end() ? std::pair{found, false}
                                               : processes_.try_emplace(std::move(key));
  Process& p = it->second;
  if (fresh) {
    p.source = source;
    p.host = o.host;
    p.order = order_;
    process_order_.push_back(&p);
    if (s_.ranks.size() < kMaxRankViews) {
      p.view = s_.ranks.size();
      NcclRankView v;
      v.host = o.host;
      v.pid = o.pid;
      v.cuda_dev = o.cuda_dev;
      v.source = source;
      s_.ranks.push_back(v);
    } else {
      ++s_.ranks_dropped;
    }
  }
  if (o.rank && !p.rank) p.rank = o.rank;
  if (p.view != SIZE_MAX) {
    NcclRankView& v = s_.ranks[p.view];
    ++v.lines;
    if (o.rank && !v.rank) v.rank = o.rank;
    if (v.cuda_dev < 0) v.cuda_dev = o.cuda_dev;
  }
  return &p;
}

static std::string who_of(const LineOrigin& o, const Process* p) {
  std::optional<int> rank = o.rank;
  if (!rank && p) rank = p->rank;
  std::string host = !o.host.empty() ? o.host : (p ? p->host : "");
  if (rank) return "rank " + std::to_string(*rank) + (host.empty() ? "" : " (" + host + ")");
  if (!host.empty()) {
    std::string w = host;
    if (o.pid >= 0) w += ":" + std::to_string(o.pid);
    if (o.cuda_dev >= 0) w += " [" + std::to_string(o.cuda_dev) + "]";
    return w;
  }
  if (!o.label.empty()) return o.label;
  return "";
}

void Parser::add_error(const ClassifiedMessage& c, const LogLine& l, Process* p,
                       const std::string& source, int lineno, sv text) {
  // misc/shmutils.cc's CUDA calls register the /dev/shm segment with CUDA: a CUDA failure there
  // ("Cuda failure 'invalid argument'" on a 64 MB /dev/shm) is the segment's, as its next WARN
  // says ("Error while creating shared memory segment"). (transport/shm's own CUDA failures are
  // not: nccl#1838's cuMem P2P failure there is a CUDA error.)
  const std::string kind = c.kind == "cuda_error" && l.nccl_file.find("shmutils") != sv::npos
                               ? std::string("shm_exhausted")
                               : c.kind;
  const FailureKind& k = failure_kind(kind);
  NcclLogError e;
  e.line = lineno;
  e.kind = kind;
  e.text = trim_copy(text);
  e.cause = explain(k);
  e.fix = k.fix;
  e.source = source;
  e.who = who_of(l.origin, p);
  e.host = !l.origin.host.empty() ? l.origin.host : (p ? p->host : "");
  e.rank = l.origin.rank;
  if (!e.rank && p) e.rank = p->rank;
  e.peer = c.peer;
  e.detail = c.detail;
  e.time_s = l.origin.time_s;
  e.time_format = static_cast<int>(l.origin.time_format);
  e.order = ++order_;
  e.wrapped = l.source != LineSource::kNcclWarn && l.source != LineSource::kNcclInfo;
  e.explains = explains_;
  // An exception's lines repeat its summary ("DistBackendError: ... unhandled system error", then
  // "ncclSystemError: System call ..."): the first of them is the one a `Last error:` explains.
  if (e.wrapped && !explains_ && failure_kind(e.kind).tier == FailureTier::kWrapper &&
      e.kind != last_wrapper_kind_) {
    last_wrapper_order_ = e.order;
    last_wrapper_kind_ = e.kind;
  }
  // PyTorch's takedown ("Some NCCL operations have failed or timed out") follows whatever the
  // watchdog found: it is booked only when the log holds no other error (finish()).
  if (e.detail == kWatchdogTakedownDetail) {
    if (takedowns_.size() < kMaxTakedowns) takedowns_.emplace_back(std::move(e), p);
    return;
  }
  if (defer_) {
    if (!e.host.empty() && address_changes_.size() < kMaxAddressChangeHosts)
      address_changes_.try_emplace(e.host, std::move(e), p);
    return;
  }
  // An unruled WARN waits for finish() (a failure only with NCCL's error trace after it); a rule
  // that names a WARN nccl_warning with a detail knows it is a failure.
  if (c.kind == "nccl_warning" && c.detail.empty()) {
    if (plain_warnings_.size() >= kMaxUnruledWarnings) {
      ++s_.unruled_warnings_dropped;
      if (p) p->last_plain_warning = -1;  // a trace after it is not an older WARN's
      return;
    }
    if (p) p->last_plain_warning = static_cast<int>(plain_warnings_.size());
    plain_warnings_.push_back(
        {std::move(e), p, 0, false, kind_of_source_file(l.nccl_file), std::string(l.nccl_file)});
    return;
  }
  book_error(std::move(e), p);
}

void Parser::book_error(NcclLogError e, Process* p) {
  if (!address_changes_.empty() && is_completion_kind(e.kind)) {
    auto it = address_changes_.find(e.host);
    if (it != address_changes_.end()) {
      auto [change, said_by] = std::move(it->second);
      address_changes_.erase(it);
      book_error(std::move(change), said_by);  // under the process that printed it
    }
  }
  const int lineno = e.line;
  if (e.kind == "libibverbs_missing") s_.ib_disabled = true;
  if (p) {
    p->has_error = true;
    if (p->view != SIZE_MAX) {
      NcclRankView& v = s_.ranks[p->view];
      if (v.errors++ == 0) {
        v.first_error_kind = e.kind;
        v.first_error_line = lineno;
      }
    }
  }
  book_.add(e, s_.errors.size() < kMaxErrors ? &s_.errors : nullptr);
}

// A terminal that hard-wraps long lines splits PyTorch's glog text mid-word ("ProcessGroupNCCL'"
// / "s watchdog got stuck for 480 seconds"): the lines without any prefix that follow an
// unclassified glog line are its text, joined as they were cut.
bool Parser::continue_wrap(const LogLine& l, sv raw) {
  const bool bare = l.source == LineSource::kOther && l.origin.host.empty() && !l.origin.rank &&
                    l.origin.label.empty() && !l.msg.empty();
  if (!bare || wrap_lines_ >= kMaxWrapLines || wrap_text_.size() + raw.size() > kMaxLineChars) {
    wrap_text_.clear();
    return false;
  }
  while (!raw.empty() && (raw.back() == '\r' || raw.back() == ' ')) raw.remove_suffix(1);
  wrap_text_.append(raw);
  ++wrap_lines_;
  if (auto c = classify_message(wrap_text_, LineSource::kTorch, false)) {
    add_error(*c, wrap_line_, wrap_process_, wrap_source_, wrap_lineno_, wrap_text_);
    wrap_text_.clear();
    return true;
  }
  return false;
}

// c10d's rendezvous and Gloo speak without the word NCCL ("torch.distributed.DistStoreError:
// Timed out after 1801 seconds waiting for clients", "[c10d] recvValue failed ...", "[.../gloo/
// transport/tcp/pair.cc:534] Connection closed by peer"), yet every NCCL communicator of a PyTorch
// job gets its unique id through that store.
// One pass over the line (it runs on every line that is not NCCL's), not one search per word.
bool Parser::c10d_line(sv raw) {
  for (size_t i = 0; i + 4 <= raw.size(); ++i) {
    const sv at = raw.substr(i);
    switch (raw[i]) {
      case 'c':
        if (starts(at, "c10d")) return true;
        break;
      case 'D':
        if (starts(at, "DistStoreError") || starts(at, "DistNetworkError")) return true;
        break;
      case 'T':
        if (starts(at, "TCPStore")) return true;
        break;
      case 'g':
      case 'G':
        if (starts(at.substr(1), "loo")) return true;
        break;
      case 'S':
        if (starts(at, "Stop_waiting")) return true;
        break;
      default:
        break;
    }
  }
  return false;
}

namespace {

// "RuntimeError: Connection reset by peer", "torch.distributed.DistNetworkError: ...": the last
// line of a Python traceback, the exception's class and its text.
bool python_exception_line(sv msg) {
  while (!msg.empty() && msg.front() == ' ') msg.remove_prefix(1);
  const size_t colon = msg.find(": ");
  if (colon == sv::npos || colon == 0 || colon > 120) return false;
  const sv cls = msg.substr(0, colon);
  for (char c : cls)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  return (cls.size() >= 5 && cls.substr(cls.size() - 5) == "Error") ||
         (cls.size() >= 9 && cls.substr(cls.size() - 9) == "Exception");
}

// UCX's and libibverbs' crash reports name the process "[host:pid :thread:tid]" at the line's
// start ("[09677202c889:5283 :0:5704] Caught signal 7 (Bus error ...)").
void bracket_origin(sv raw, LineOrigin& o) {
  while (!raw.empty() && raw.front() == ' ') raw.remove_prefix(1);
  if (raw.empty() || raw.front() != '[') return;
  const size_t colon = raw.find(':');
  const size_t close = raw.find(']');
  if (colon == sv::npos || close == sv::npos || colon > close || colon < 2) return;
  const sv host = raw.substr(1, colon - 1);
  for (char c : host)
    if (!scan::is_name_char(c)) return;
  sv rest = raw.substr(colon + 1, close - colon - 1);
  long pid;
  if (!scan::read_int(rest, &pid, 9)) return;
  o.host = std::string(host);
  o.pid = pid;
}

// The number after `key` ("rank: 5" of c10d's store barrier); nullopt when none.
std::optional<int> number_after(sv text, sv key) {
  const size_t at = text.find(key);
  if (at == sv::npos) return std::nullopt;
  sv rest = text.substr(at + key.size());
  long v;
  return scan::read_int(rest, &v, 7) ? std::optional<int>(static_cast<int>(v)) : std::nullopt;
}

Stall stall_of(LogLine l, sv text, const std::string& source, int lineno) {
  l.msg = {};
  l.nccl_file = {};
  return Stall{l, std::string(text), source, lineno};
}

}  // namespace

void Parser::note_connect_retry(const LogLine& l, Process* p, const std::string& source,
                                int lineno) {
  // "Call to connect returned Connection refused, retrying" (2.4-2.18), "socketPollConnect:
  // connect to X returned ..., retrying (N/34) after sleep for M msec" (2.19+).
  if (has(l.msg, "retrying") && has(l.msg, "onnect"))
    p->connect_retry = stall_of(l, l.msg, source, lineno);
  else if (!trace_return_code(l.msg))  // its error trace still belongs to the connect
    p->connect_retry.reset();
}

void Parser::note_ib_event(const LogLine& l, const Process* p, const std::string& source,
                           int lineno) {
  const auto ev = ib_async_event(l.msg);
  if (!ev) return;
  // An event on a port NCCL's IB transport opened: that transport was up (it names the network
  // when nothing else does), even where the event is benign and no error is booked.
  if (!inferred_network_ && has(l.msg, "NET/IB")) {
    inferred_network_ = "IB";
    inferred_evidence_ = "an NET/IB device event (line " + std::to_string(lineno) + ")";
  }
  for (NcclIbEvent& e : s_.ib_events)
    if (e.event == ev->event && e.device == ev->device) {
      ++e.count;
      return;
    }
  if (s_.ib_events.size() >= kMaxIbEvents) {
    ++s_.ib_events_dropped;
    return;
  }
  s_.ib_events.push_back(
      {ev->event, ev->device, 1, ev->benign, ev->meaning, lineno, source, who_of(l.origin, p)});
}

bool Parser::job_line(const LogLine& l, Process* p, const std::string& source, int lineno,
                      sv raw) {
  // A process of an NCCL job killed by SIGBUS ("Caught signal 7 (Bus error: nonexistent physical
  // address)" from UCX's handler, torchrun's "Signal 7 (SIGBUS) received by PID"): a shared-memory
  // segment NCCL mapped in /dev/shm could not be backed when touched, /dev/shm being full or
  // small; NCCL prints no WARN for it.
  if ((has(raw, "Bus error") || has(raw, "SIGBUS")) && (s_.nccl_lines || s_.torch_nccl_lines) &&
      (has(raw, "ignal 7") || has(raw, "SIGBUS") || has(raw, "Fatal Python error"))) {
    LogLine b = l;
    if (b.origin.host.empty()) bracket_origin(raw, b.origin);
    Process* bp = p ? p : (!b.origin.host.empty() ? process_of(b, source) : nullptr);
    add_error({"shm_exhausted", "", "SIGBUS: a mapped /dev/shm segment could not be backed"}, b,
              bp, source, lineno, b.msg);
    return true;
  }
  // c10d's store barrier at process-group creation: every rank waits until world_size workers
  // have checked in to the store. Waiting that never completes means a rank never joined.
  if (has(raw, "store based barrier") || has(raw, "store-based barrier")) {
    if (has(raw, "Completed store")) {
      store_barrier_.reset();
    } else if (has(raw, "Timed out initializing process group")) {
      LogLine b = l;
      if (!b.origin.rank) b.origin.rank = number_after(raw, "rank: ");
      add_error({"bootstrap_failed", "", "c10d's store barrier timed out: a rank never joined"},
                b, p, source, lineno, b.msg);
    } else if (has(raw, "Waiting in store based barrier") && !store_barrier_) {
      LogLine b = l;
      if (!b.origin.rank) b.origin.rank = number_after(raw, "rank: ");
      store_barrier_ = stall_of(b, b.msg, source, lineno);
    }
    return true;
  }
  // A Python traceback: whether it went through torch.distributed decides whose socket error
  // ends it (the rendezvous store's, "RuntimeError: Connection reset by peer").
  if (has(raw, "Traceback (most recent call last)")) {
    dist_traceback_ = false;
  } else if (has(raw, "torch/distributed/")) {
    dist_traceback_ = true;
  } else if (dist_traceback_ && python_exception_line(l.msg)) {
    dist_traceback_ = false;
    // Exceptions naming NCCL or c10d are read by the rules for those.
    if (has(raw, "NCCL") || has(raw, "nccl") || c10d_line(raw)) return false;
    if (auto c = classify_socket_error(l.msg)) {
      add_error(*c, l, p, source, lineno, l.msg);
      return true;
    }
  }
  return false;
}

void Parser::book_stalls() {
  for (Process* each : process_order_) {
    Process& p = *each;
    if (!p.connect_retry || p.has_error) continue;
    const Stall& st = *p.connect_retry;
    auto c = classify_socket_error(st.text);
    if (!c) continue;
    c->detail = "the log ends while it retries the connect: nothing after shows it connected";
    add_error(*c, st.line, &p, st.source, st.lineno, st.text);
  }
  if (store_barrier_) {
    const Stall& st = *store_barrier_;
    Process* p = st.line.origin.rank ? process_of(st.line, st.source) : nullptr;
    add_error({"bootstrap_failed", "",
               "c10d's store barrier still waiting when the log ends: a rank never joined"},
              st.line, p, st.source, st.lineno, st.text);
  }
}

void Parser::line(const std::string& source, int lineno, sv raw) {
  LogLine l = split_log_line(raw);
  // The rest of a wrapped line, booked with its start: not a second error.
  if (!wrap_text_.empty() && continue_wrap(l, raw)) return;
  const bool nccl = l.source == LineSource::kNcclInfo || l.source == LineSource::kNcclWarn;
  // (Paddle writes "Nccl error, unhandled cuda error".)
  const bool mentions_nccl = nccl || has(raw, "NCCL") || has(raw, "nccl") || has(raw, "Nccl");
  // nccl-tests' own failures (src/common.h): "host: Test CUDA failure f:N 'x'", "host: Test
  // timeout (300s) f:N".
  const bool test_cuda =
      !nccl && ((has(raw, "Test ") &&
                 (has(raw, "Test CUDA failure") || has(raw, "Test timeout ("))) ||
                has(raw, "Cuda failure common.cu"));
  if (nccl) ++s_.nccl_lines;
  if (!nccl &&
      (l.source == LineSource::kTorch || test_cuda ||
       (mentions_nccl && (has(raw, "NCCL error") || has(raw, "Test NCCL failure") ||
                          has(raw, "WorkNCCL(") || has(raw, "ncclRemoteError") ||
                          has(raw, "ncclSystemError") || has(raw, "ncclInternalError") ||
                          has(raw, "ncclInvalidUsage") || has(raw, "ncclUnhandledCudaError")))))
    ++s_.torch_nccl_lines;
  Process* p =
      (nccl || l.source == LineSource::kTorch || l.origin.rank) ? process_of(l, source) : nullptr;
  const bool continuation = last_error_pending_;
  // An exception's "Last error:" text is printed without the prefix of the line that raised it.
  const bool no_origin = l.origin.host.empty() && !l.origin.rank && l.origin.label.empty();
  if (continuation && no_origin) {
    l.origin = last_origin_;
    p = last_process_;
  } else if (!no_origin) {
    last_origin_ = l.origin;
    last_process_ = p;
  }
  if (l.msg == "Last error:" ||
      (l.msg.size() > 11 && l.msg.substr(l.msg.size() - 11) == "Last error:")) {
    last_error_pending_ = true;
    return;
  }
  if (!l.msg.empty()) last_error_pending_ = false;
  if (nccl && p && l.source == LineSource::kNcclInfo) note_connect_retry(l, p, source, lineno);
  if (!nccl && l.source != LineSource::kTorch && job_line(l, p, source, lineno, raw)) return;
  if (!mentions_nccl && !continuation && !has(raw, "NET/") && !has(raw, "Channel") &&
      !has(raw, "Ring") && !has(raw, "DistBackendError") && !test_cuda && !c10d_line(raw) &&
      !has(raw, "terminated with exception"))
    return;
  std::string msg(l.msg);
  if (nccl || has(raw, "NCCL version")) nccl_facts(l, msg, lineno, p);
  // aws-ofi-nccl's text quoted in an exception ("Last error: NET/OFI ...") names the plugin too.
  if (!nccl && !s_.plugin && continuation && has(raw, "NET/OFI")) s_.plugin = "aws-ofi-nccl";
  if (l.source == LineSource::kNcclWarn) note_ib_event(l, p, source, lineno);
  // The port's GID or LID table changed under NCCL's connections: NCCL carries on (a warning),
  // but completion errors that follow on that host are what the change did to its queue pairs,
  // and then the change is their cause. Kept aside until such an error arrives (book_error).
  if (l.source == LineSource::kNcclWarn && address_change_event(l.msg)) {
    defer_ = true;
    add_error({"ib_async_error", "", "the port's address table changed under NCCL's connections"},
              l, p, source, lineno, l.msg);
    defer_ = false;
    return;
  }
  if (auto c = classify_message(l.msg, l.source, continuation && !l.msg.empty())) {
    if (!l.origin.rank && !(p && p->rank)) l.origin.rank = rank_in_text(l.msg);
    explains_ = continuation ? last_wrapper_order_ : 0;
    add_error(*c, l, p, source, lineno, l.msg);
    explains_ = 0;
    if (continuation) infer_from_error(*c, l.msg, lineno);
  } else if ((l.source == LineSource::kTorch && !l.msg.empty() &&
              l.origin.time_format == TimeFormat::kGlogNoYear) ||
             // "... Rank 2] Process group watchdog thread terminated with exception: [Rank 2]"
             // with the exception's text on the terminal's next row.
             (!nccl && has(l.msg, "terminated with exception"))) {
    wrap_text_.assign(l.msg);
    wrap_line_ = l;
    if (!wrap_line_.origin.rank) wrap_line_.origin.rank = rank_in_text(l.msg);
    wrap_line_.msg = {};
    wrap_line_.nccl_file = {};
    wrap_process_ = p;
    wrap_source_ = source;
    wrap_lineno_ = lineno;
    wrap_lines_ = 0;
  }
  // An exception printed on one line: "... ncclRemoteError: ... Last error: NET/IB : Got ...".
  // nccl-tests built on NCCL >= 2.13 print ncclGetLastError after the code's text: "Test NCCL
  // failure common.cu:1030 'unhandled system error (...) / socketProgressOpt: Call to ...'".
  size_t last = nccl ? sv::npos : l.msg.find("Last error: ");
  size_t skip = 12;
  // XLA/JAX: "Last NCCL warning(error): 'Bootstrap : no socket interface found'".
  if (last == sv::npos && !nccl) {
    last = l.msg.find("Last NCCL warning(error): '");
    skip = 27;
  }
  if (last == sv::npos && !nccl && has(l.msg, "Test NCCL failure")) {
    last = l.msg.find(" / ");
    skip = 3;
  }
  if (last != sv::npos && last + skip < l.msg.size()) {
    sv tail = l.msg.substr(last + skip);
    if (skip != 12 && tail.back() == '\'') tail.remove_suffix(1);
    if (auto c = classify_message(tail, LineSource::kOther, true)) {
      explains_ = last_wrapper_order_;
      add_error(*c, l, p, source, lineno, tail);
      explains_ = 0;
      infer_from_error(*c, tail, lineno);
    }
  }
}

namespace {
constexpr size_t kRowPadding = 24;  // spaces; NCCL's aligned INFO columns use fewer
sv row_padding() {
  static const std::string kPad(kRowPadding, ' ');
  return kPad;
}
}  // namespace

std::vector<sv> Parser::padded_rows(sv raw) {
  const sv kPad = row_padding();
  std::vector<sv> rows;
  size_t begin = 0;
  for (size_t run = raw.find(kPad); run != sv::npos; run = raw.find(kPad, begin)) {
    const size_t end = raw.find_first_not_of(' ', run);
    if (end == sv::npos) break;  // trailing padding: the row goes on to the end
    if (raw.find_first_not_of(' ', begin) < run) rows.push_back(raw.substr(begin, run - begin));
    begin = end;
  }
  rows.push_back(raw.substr(begin));
  return rows;
}

namespace {

// A paste that lost its newlines can put an error line and the next NCCL line on one line ("...
// RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)
// 02fdc141b80d:213:213 [1] NCCL INFO cudaDriverVersion 12080"): where NCCL's host:pid:tid token
// is preceded by an error's text (no launcher prefix says "Error"), the row starts there. 0: no
// such split.
size_t joined_nccl_line_start(sv raw) {
  size_t k = raw.find(" NCCL INFO ");
  if (k == sv::npos) k = raw.find(" NCCL WARN ");
  if (k == sv::npos || k < 24) return 0;
  const sv head = raw.substr(0, k);
  if (!has(head, "rror")) return 0;  // "NCCL error", "RuntimeError: ", "ERROR "
  // The last host:pid:tid token before the NCCL tag (past "[dev]" and a file:line).
  size_t end = head.size();
  for (int tokens = 0; tokens < 3 && end > 0; ++tokens) {
    const size_t sp = head.rfind(' ', end - 1);
    const size_t start = sp == sv::npos ? 0 : sp + 1;
    if (is_host_pid_tid(head.substr(start, end - start)))
      return start > 0 && has(head.substr(0, start), "rror") ? start : 0;
    if (sp == sv::npos) return 0;
    end = sp;
  }
  return 0;
}

}  // namespace

void Parser::physical_row(const std::string& source, int lineno, sv raw) {
  if (const size_t split = joined_nccl_line_start(raw)) {
    physical_row(source, lineno, raw.substr(0, split));
    raw.remove_prefix(split);
  }
  if (raw.find("](http") != sv::npos) {  // a log pasted where GitHub auto-linked its words
    std::string md = strip_markdown_links(raw);
    if (!ascii_only(md)) md = utf8_clean(md);
    line(source, lineno, md);
  } else if (ascii_only(raw)) {
    line(source, lineno, raw);
  } else {
    const std::string clean = utf8_clean(std::string(raw));
    line(source, lineno, clean);
  }
}

void Parser::begin(const std::string& source) {
  s_.sources.push_back(source);
  source_ = source;
  lineno_ = 0;
  cached_ = nullptr;  // its source pointer is source_'s for every input
  last_error_pending_ = false;
  last_wrapper_order_ = 0;
  last_wrapper_kind_.clear();
  wrap_text_.clear();
  last_origin_ = LineOrigin{};
  last_process_ = nullptr;
  dist_traceback_ = false;
}

void Parser::feed_line(sv raw) {
  ++lineno_;
  ++s_.lines;
  if (raw.size() > kMaxLineChars) return;
  // A terminal paste can join the screen's rows into one line, each padded with spaces to the
  // terminal's width: a long run of spaces inside a line ends one row. No NCCL or PyTorch line
  // has such a run inside it (leading indentation is not inside).
  if (raw.size() < 2 * kRowPadding || raw.find(row_padding()) == sv::npos)
    physical_row(source_, lineno_, raw);  // the usual line: no vector of rows to build
  else
    for (sv row : padded_rows(raw)) physical_row(source_, lineno_, row);
}

void Parser::feed(const std::string& source, const std::string& text) {
  begin(source);
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl == text.size() && nl == start) break;  // the final newline ends the last line
    feed_line(sv(text.data() + start, nl - start));
    start = nl + 1;
  }
}

NcclLogSummary Parser::finish() {
  // An NCCL call that fails returns its error up the stack, and with NCCL_DEBUG=INFO each level
  // prints "file.cc:N -> code". A WARN fabcheck has no rule for, from a process that printed INFO
  // lines but no such trace, was a warning NCCL carried on from (a plugin's "Maximum retry
  // reached for connect"): not a failure. Without INFO lines the log cannot tell; it counts.
  // NCCL's return code in the trace after such a WARN says what kind of error it was ("-> 1": a
  // CUDA call, "-> 2": a system call such as NVML or sysfs during topology detection).
  for (auto& w : plain_warnings_) {
    if (!w.trace_code && w.file_kind) {
      // No trace to read the return code from: the file NCCL's WARN came from names its domain.
      w.error.kind = w.file_kind;
      const FailureKind& k = failure_kind(w.error.kind);
      w.error.cause = explain(k);
      w.error.fix = k.fix;
      w.error.detail = "a WARN without a rule, from NCCL's " + w.file;
    }
    if (w.trace_code) {
      w.error.kind = kind_of_return_code(w.trace_code, w.trace_bootstrap);
      const FailureKind& k = failure_kind(w.error.kind);
      w.error.cause = explain(k);
      w.error.fix = k.fix;
      w.error.detail = "NCCL's error trace after it returned " + std::to_string(w.trace_code);
    }
    if (!w.process || w.process->info_lines == 0 || w.trace_code != 0)
      book_error(std::move(w.error), w.process);
  }
  plain_warnings_.clear();
  std::stable_sort(s_.errors.begin(), s_.errors.end(),
                   [](const NcclLogError& a, const NcclLogError& b) { return a.order < b.order; });
  // A process that printed NCCL's error trace but no WARN (socketPollConnect in 2.18 failed
  // silently): the trace's return code and files are all the log says.
  for (Process* each : process_order_) {
    Process& p = *each;
    if (p.has_error || !p.trace_code) continue;
    const char* kind = kind_of_return_code(p.trace_code, p.trace_bootstrap);
    ClassifiedMessage c{
        kind, "", "no WARN line; NCCL's error trace returned " + std::to_string(p.trace_code)};
    LogLine l;
    l.source = LineSource::kNcclInfo;  // NCCL's own trace line
    l.origin.host = p.host;
    l.origin.rank = p.rank;
    add_error(c, l, &p, p.source, p.trace_line, p.trace_text);
  }
  // Nothing failed outright: a process still retrying its connect, or c10d's store barrier still
  // waiting, when the log ends is what the log shows of the failure.
  if (s_.errors.empty()) {
    book_stalls();
    for (auto& [e, p] : takedowns_) book_error(std::move(e), p);
  }
  takedowns_.clear();
  decide_network();
  for (auto& v : s_.ranks)
    v.who = v.rank ? "rank " + std::to_string(*v.rank) + (v.host.empty() ? "" : " (" + v.host + ")")
                   : v.host + (v.pid >= 0 ? ":" + std::to_string(v.pid) : "");
  book_.finish(s_);
  return std::move(s_);
}

}  // namespace detail

NcclLogSummary parse_nccl_logs(const std::vector<NcclLogInput>& inputs) {
  detail::Parser p;
  for (const auto& in : inputs) p.feed(in.name, in.text);
  return p.finish();
}

NcclLogSummary parse_nccl_log(const std::string& text) {
  detail::Parser p;  // no copy of the text: logs reach hundreds of MB
  p.feed("", text);
  return p.finish();
}

}  // namespace fabkit::nccl_log
