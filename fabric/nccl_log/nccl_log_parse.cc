// Line formats come from NCCL's own INFO/WARN calls (see tests/fixtures/nccl_log/README.md):
//   init.cc       "NCCL version %s"             "Using network %s"
//   bootstrap.cc  "Bootstrap : Using %s:%s"
//   net_ib.cc     "NET/IB : Using [%d]%s:%d/%s ... ; OOB %s:%s"   "NET/IB : No device found."
//   net_socket.cc "NET/Socket : Using [%d]%s:%s ..."
//   transport.cc  "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s" (2.3-2.6: "Ring
//   %02d")
// Matching is by substring and small regexes per line: a log is whatever a job printed, with
// other programs' output interleaved, so nothing here assumes a line is NCCL's. Prefixes are
// removed by nccl_log_line.cc, errors named by nccl_log_classify.cc, and the cause chosen in
// nccl_log_failures.cc.
#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "common/utf8_text.h"
#include "fabric/nccl_log/nccl_failure_kinds.h"
#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_log/nccl_log_classify.h"
#include "fabric/nccl_log/nccl_log_failures.h"
#include "fabric/nccl_log/nccl_log_line.h"
#include "fabric/nccl_log/nccl_log_text.h"

namespace fabkit::nccl_log {
namespace {

constexpr size_t kMaxLineChars = 4096;
constexpr size_t kMaxErrors = 2000;  // kept lines; every error still counts in its failure
constexpr size_t kMaxRankViews = 4096;
constexpr int kMaxWrapLines = 6;

using sv = std::string_view;

bool has(sv s, sv sub) { return s.find(sub) != sv::npos; }
bool starts(sv s, sv p) { return s.substr(0, p.size()) == p; }

// What one process printed that decides the network or explains its failure.
struct Process {
  size_t view = SIZE_MAX;  // index into s.ranks, or SIZE_MAX when past the cap
  std::optional<int> ib_using_line, last_socket_using_line;
  bool has_error = false;
  int info_lines = 0;  // NCCL INFO lines: with them, a failed call leaves an error trace
  int last_plain_warning = -1;  // index into plain_warnings_ of its latest unruled WARN
  int trace_code = 0, trace_line = 0;
  std::string trace_text;
  bool trace_bootstrap = false;
  std::string source;
  std::string host;
  std::optional<int> rank;
  long order = 0;
};

class Parser {
 public:
  void feed(const std::string& source, const std::string& text);
  NcclLogSummary finish();

 private:
  void line(const std::string& source, int lineno, sv raw);
  void nccl_facts(const LogLine& l, const std::string& msg, int lineno, Process* p);
  void infer_from_error(const ClassifiedMessage& c, sv msg, int lineno);
  Process* process_of(const LogLine& l, const std::string& source);
  Process* lookup_process(const LogLine& l, const std::string& source);
  void add_error(const ClassifiedMessage& c, const LogLine& l, Process* p,
                 const std::string& source, int lineno, sv text);
  static bool c10d_line(sv raw);
  void book_error(NcclLogError e, Process* p);
  void continue_wrap(const LogLine& l, sv raw);

  NcclLogSummary s_;
  std::set<int> net_devices_used_;
  std::optional<int> using_network_line_, ib_using_line_, socket_using_line_, ib_no_device_line_;
  std::optional<std::string> inferred_network_, inferred_evidence_;
  std::map<std::string, Process> processes_;
  std::vector<std::string> process_order_;
  bool last_error_pending_ = false;
  // A PyTorch glog line the terminal wrapped: its text so far, joined with the unprefixed lines
  // that follow it until they say something (at most kMaxWrapLines lines).
  std::string wrap_text_;
  LogLine wrap_line_;
  Process* wrap_process_ = nullptr;
  std::string wrap_source_;
  int wrap_lineno_ = 0, wrap_lines_ = 0;
  // Unclassified WARNs of processes that printed INFO lines: a failure only if that process
  // also printed NCCL's error trace (finish() decides).
  struct PlainWarning {
    NcclLogError error;
    Process* process;
    int trace_code;  // the first error trace its process printed after it; 0: none
    const char* file_kind;  // kind_of_source_file() of the WARN's "file.cc:N"; null: none
    std::string file;       // that "file.cc:N"
  };
  std::vector<PlainWarning> plain_warnings_;
  std::optional<std::string> plugin_net_name_;  // "FastSocket" of a plugin's "NET/FastSocket :"
  // The process of the previous line (process_of's cache).
  Process* cached_ = nullptr;
  const std::string* cached_source_ = nullptr;
  long cached_pid_ = -1;
  std::string cached_host_, cached_label_;
  std::optional<int> cached_rank_;
  int cached_dev_ = -1;
  bool ofi_network_named_ = false;  // a line says "... is AWS Libfabric" / "via NET/AWS Libfabric"
  LineOrigin last_origin_;          // the origin of the latest line that had one
  Process* last_process_ = nullptr;
  long order_ = 0;
  FailureBook book_;
};

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
  auto [it, fresh] = processes_.try_emplace(key);
  Process& p = it->second;
  if (fresh) {
    p.source = source;
    p.host = o.host;
    p.order = order_;
    process_order_.push_back(key);
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

std::string who_of(const LineOrigin& o, const Process* p) {
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
  const FailureKind& k = failure_kind(c.kind);
  NcclLogError e;
  e.line = lineno;
  e.kind = c.kind;
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
  if (c.kind == "nccl_warning") {
    if (p) p->last_plain_warning = static_cast<int>(plain_warnings_.size());
    plain_warnings_.push_back(
        {std::move(e), p, 0, kind_of_source_file(l.nccl_file), std::string(l.nccl_file)});
    return;
  }
  book_error(std::move(e), p);
}

void Parser::book_error(NcclLogError e, Process* p) {
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

void Parser::nccl_facts(const LogLine& l, const std::string& msg, int lineno, Process* p) {
  static const std::regex version(R"(NCCL version (\d+\.\d+\.\d+[^\s]*))");
  NcclChannelLine channel;
  static const std::regex socket_if(R"(\[\d+\]([^\s\[\]]+))");
  static const std::regex plugin_loaded(R"(NET/Plugin ?: ?Loaded net plugin (.+?)( \(v\d+\))?$)");
  std::smatch m;
  // Gates: each has() is a scan of the line, and this runs on every NCCL line of logs that reach
  // hundreds of MB (the budget is 50 ms per MB): ask the rare questions only of lines that can
  // answer them.
  const bool net = has(msg, "NET/");
  const bool plugin = net || has(msg, "lugin");
  if (!s_.version && has(msg, "NCCL version ") && std::regex_search(msg, m, version))
    s_.version = m[1].str();
  if (starts(msg, "Using network ")) {
    std::string net = trim_copy(sv(msg).substr(14));
    s_.networks_seen.push_back(net);
    s_.network = net;
    using_network_line_ = lineno;
    if (p && p->view != SIZE_MAX) s_.ranks[p->view].network = net;
  } else if (starts(msg, "Using internal Network ")) {  // NCCL 2.2-2.3's network line
    std::string net = trim_copy(sv(msg).substr(23));
    s_.networks_seen.push_back(net);
    s_.network = net;
    using_network_line_ = lineno;
    if (p && p->view != SIZE_MAX) s_.ranks[p->view].network = net;
  } else if (starts(msg, "NET/IB : Using") || starts(msg, "NET/IB: Using") ||
             starts(msg, "NET/IB: [") || starts(msg, "NET/IB : [")) {
    // 2.3's "NET/IB : Using interface ib0 for sideband communication" lists no device: not it.
    NcclLogSummary probe;
    parse_ib_using(msg, probe);
    if (!probe.hcas.empty()) {
      s_.hcas = std::move(probe.hcas);
      s_.hca_link_layers = std::move(probe.hca_link_layers);
      if (probe.ib_oob_interface) s_.ib_oob_interface = probe.ib_oob_interface;
      if (!ib_using_line_) ib_using_line_ = lineno;
      if (p && !p->ib_using_line) p->ib_using_line = lineno;
    }
  } else if (starts(msg, "NET/Socket : Using") || starts(msg, "NET/Socket: Using")) {
    s_.socket_interfaces.clear();
    if (!socket_using_line_) socket_using_line_ = lineno;
    if (p) p->last_socket_using_line = lineno;
    std::string rest = msg.substr(msg.find("Using") + 5);
    for (std::sregex_iterator it(rest.begin(), rest.end(), socket_if), end; it != end; ++it)
      s_.socket_interfaces.push_back((*it)[1].str());
  } else if (starts(msg, "Bootstrap : Using") || starts(msg, "Bootstrap: Using")) {
    std::string v = trim_copy(sv(msg).substr(msg.find("Using") + 5));
    if (v.rfind("[0]", 0) == 0) v = v.substr(3);  // 2.3-2.6 print "Using [0]eth0:..."
    s_.bootstrap_interface = v;
  } else if (has(msg, "evice") &&
             (has(msg, "NET/IB : No device found") || has(msg, "NET/IB: No device found") ||
              has(msg, "call to devices() returned 0 devices"))) {
    s_.ib_no_device = true;
    if (!ib_no_device_line_) ib_no_device_line_ = lineno;
  } else if (starts(msg, "NCCL_IB_DISABLE set by environment to")) {
    s_.ib_disabled = msg.find(" to 0") == std::string::npos;
  } else if (plugin && has(msg, "Loaded net plugin") && std::regex_search(msg, m, plugin_loaded)) {
    s_.plugin = trim_copy(m[1].str());
  } else if (net && (has(msg, "NET/OFI Using aws-ofi-nccl") ||
                     has(msg, "NET/OFI Initializing aws-ofi-nccl"))) {
    s_.plugin = "aws-ofi-nccl";
  } else if (plugin && (has(msg, "No plugin found") || has(msg, "Could not find: libnccl-net") ||
                        (has(msg, "returned 2 ") && has(msg, "No such file or directory")) ||
                        has(msg, "No network plugin found"))) {
    s_.plugin_absent = true;  // not an error: NCCL uses its internal IB/Socket transports
  } else if (net && parse_channel(msg, &channel)) {
    ++s_.net_channel_lines;
    s_.gdr = s_.gdr.value_or(false) || channel.gdr;
    net_devices_used_.insert(channel.device);
    if (!using_network_line_) s_.network = channel.network;
  } else if (has(msg, " via ") &&
             (has(msg, " via P2P") || has(msg, " via SHM") || has(msg, " via direct"))) {
    ++s_.intra_node_channel_lines;
  }
  if (net && (has(msg, "NET/Plugin") || has(msg, "NET/OFI"))) ++s_.plugin_lines;
  if (net && has(msg, "NET/OFI") && !s_.plugin) s_.plugin = "aws-ofi-nccl";
  if (net && has(msg, "AWS Libfabric")) ofi_network_named_ = true;
  const size_t prov = net ? msg.find("Selected Provider is ") : std::string::npos;
  const size_t prov2 = net ? msg.find("Selected provider is ") : std::string::npos;
  const size_t pp = prov != std::string::npos ? prov : prov2;
  if (pp != std::string::npos) {
    std::string v = trim_copy(sv(msg).substr(pp + 21));
    s_.ofi_provider = v.substr(0, v.find(' '));
    s_.ofi_provider->erase(std::remove(s_.ofi_provider->begin(), s_.ofi_provider->end(), ','),
                           s_.ofi_provider->end());
  }
  // A rank NCCL states for this process: "comm 0x.. rank 5 nranks 8 cudaDev 1".
  if (p && has(msg, " nranks ")) {
    const size_t r = msg.find(" rank ");
    if (r != std::string::npos && r < msg.find(" nranks ")) {
      int v = 0, n = 0;
      for (size_t i = r + 6;
           i < msg.size() && std::isdigit(static_cast<unsigned char>(msg[i])) && n < 7; ++i, ++n)
        v = v * 10 + (msg[i] - '0');
      if (n && !p->rank) {
        p->rank = v;
        if (p->view != SIZE_MAX && !s_.ranks[p->view].rank) s_.ranks[p->view].rank = v;
      }
    }
  }
  // NCCL's error trace at INFO level: "transport/net_socket.cc:368 -> 6".
  if (const int code = trace_return_code(msg)) {
    if (p && p->last_plain_warning >= 0 && !plain_warnings_[p->last_plain_warning].trace_code)
      plain_warnings_[p->last_plain_warning].trace_code = code;
    if (p && !p->trace_code) {
      p->trace_code = code;
      p->trace_line = lineno;
      p->trace_text = msg;
    }
    if (p && has(msg, "bootstrap.cc")) p->trace_bootstrap = true;
    if (!inferred_network_ && (has(msg, "net_socket.c") || has(msg, "net_ib.c"))) {
      inferred_network_ = has(msg, "net_socket.c") ? "Socket" : "IB";
      inferred_evidence_ = "NCCL's error trace through transport/" +
                           std::string(has(msg, "net_socket.c") ? "net_socket" : "net_ib") +
                           " (line " + std::to_string(lineno) + ")";
    }
  }
  if (l.source == LineSource::kNcclWarn && (has(msg, "NET/IB") || has(msg, "NET/Socket")) &&
      !benign_warning(msg))
    infer_from_error(ClassifiedMessage{"completion_error", "", ""}, msg, lineno);
  if (p && l.source == LineSource::kNcclInfo) ++p->info_lines;
  // A net plugin's own lines: "NET/FastSocket : Connected after 1000 retries." (NCCL's internal
  // transports, the plugin loader and aws-ofi-nccl are decided elsewhere).
  if (!plugin_net_name_ && l.source == LineSource::kNcclInfo && starts(msg, "NET/")) {
    const size_t end = msg.find_first_of(" :/", 4);
    const std::string name = msg.substr(4, end == std::string::npos ? end : end - 4);
    if (!name.empty() && name != "IB" && name != "Socket" && name != "Plugin" && name != "OFI" &&
        name != "IBext" && end != std::string::npos && msg.compare(end, 2, " :") == 0)
      plugin_net_name_ = name;
  }
}

// An NET/IB completion error or HCA event names the network even when nothing else in the log
// does: both come from queue pairs and devices the IB transport opened.
void Parser::infer_from_error(const ClassifiedMessage& c, sv msg, int lineno) {
  // The socket transport's receive that met a larger message than posted carried the data.
  if (!inferred_network_ && has(msg, "NET/Socket") && has(msg, "truncated")) {
    inferred_network_ = "Socket";
    inferred_evidence_ = "an NET/Socket transfer error (line " + std::to_string(lineno) + ")";
    return;
  }
  if (!inferred_network_ && has(msg, "NET/Socket") && has(msg, "socket progress error")) {
    inferred_network_ = "Socket";
    inferred_evidence_ = "an NET/Socket transfer error (line " + std::to_string(lineno) + ")";
    return;
  }
  if (inferred_network_ || !has(msg, "NET/IB")) return;
  // Errors of queue pairs, requests and peers the IB transport had set up; not its init failing
  // to find or open a device (then NCCL may still have run over sockets), nor a harmless event.
  const bool event = has(msg, "async") && has(msg, "event");
  const bool transfer = has(msg, "completion") || has(msg, "QP") || has(msg, "CQE") ||
                        has(msg, "req ") || has(msg, "mismatch") || has(msg, "incompatible");
  if (!event && !transfer) return;
  (void)c;
  inferred_network_ = "IB";
  inferred_evidence_ = std::string("an NET/IB ") + (event ? "device event" : "transfer error") +
                       " (line " + std::to_string(lineno) + ")";
}

// A terminal that hard-wraps long lines splits PyTorch's glog text mid-word ("ProcessGroupNCCL'"
// / "s watchdog got stuck for 480 seconds"): the lines without any prefix that follow an
// unclassified glog line are its text, joined as they were cut.
void Parser::continue_wrap(const LogLine& l, sv raw) {
  const bool bare = l.source == LineSource::kOther && l.origin.host.empty() && !l.origin.rank &&
                    l.origin.label.empty() && !l.msg.empty();
  if (!bare || wrap_lines_ >= kMaxWrapLines || wrap_text_.size() + raw.size() > kMaxLineChars) {
    wrap_text_.clear();
    return;
  }
  while (!raw.empty() && (raw.back() == '\r' || raw.back() == ' ')) raw.remove_suffix(1);
  wrap_text_.append(raw);
  ++wrap_lines_;
  if (auto c = classify_message(wrap_text_, LineSource::kTorch, false)) {
    add_error(*c, wrap_line_, wrap_process_, wrap_source_, wrap_lineno_, wrap_text_);
    wrap_text_.clear();
  }
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

void Parser::line(const std::string& source, int lineno, sv raw) {
  LogLine l = split_log_line(raw);
  if (!wrap_text_.empty()) continue_wrap(l, raw);
  const bool nccl = l.source == LineSource::kNcclInfo || l.source == LineSource::kNcclWarn;
  const bool mentions_nccl = nccl || has(raw, "NCCL") || has(raw, "nccl");
  // nccl-tests' own failures (src/common.h): "host: Test CUDA failure f:N 'x'", "host: Test
  // timeout (300s) f:N".
  const bool test_cuda =
      !nccl && has(raw, "Test ") && (has(raw, "Test CUDA failure") || has(raw, "Test timeout ("));
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
  if (!mentions_nccl && !continuation && !has(raw, "NET/") && !has(raw, "Channel") &&
      !has(raw, "Ring") && !has(raw, "DistBackendError") && !test_cuda && !c10d_line(raw))
    return;
  std::string msg(l.msg);
  if (nccl || has(raw, "NCCL version")) nccl_facts(l, msg, lineno, p);
  // aws-ofi-nccl's text quoted in an exception ("Last error: NET/OFI ...") names the plugin too.
  if (!nccl && !s_.plugin && continuation && has(raw, "NET/OFI")) s_.plugin = "aws-ofi-nccl";
  if (auto c = classify_message(l.msg, l.source, continuation && !l.msg.empty())) {
    if (!l.origin.rank && !(p && p->rank)) l.origin.rank = rank_in_text(l.msg);
    add_error(*c, l, p, source, lineno, l.msg);
    if (continuation) infer_from_error(*c, l.msg, lineno);
  } else if (l.source == LineSource::kTorch && !l.msg.empty() &&
             l.origin.time_format == TimeFormat::kGlogNoYear) {
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
  if (last == sv::npos && !nccl && has(l.msg, "Test NCCL failure")) {
    last = l.msg.find(" / ");
    skip = 3;
  }
  if (last != sv::npos && last + skip < l.msg.size()) {
    sv tail = l.msg.substr(last + skip);
    if (skip == 3 && tail.back() == '\'') tail.remove_suffix(1);
    if (auto c = classify_message(tail, LineSource::kOther, true)) {
      add_error(*c, l, p, source, lineno, tail);
      infer_from_error(*c, tail, lineno);
    }
  }
}

void Parser::feed(const std::string& source, const std::string& text) {
  s_.sources.push_back(source);
  last_error_pending_ = false;
  wrap_text_.clear();
  last_origin_ = LineOrigin{};
  last_process_ = nullptr;
  size_t start = 0;
  int lineno = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl == text.size() && nl == start) break;  // the final newline ends the last line
    sv raw(text.data() + start, nl - start);
    start = nl + 1;
    ++lineno;
    ++s_.lines;
    // NCCL formats a log line into a 1024-byte buffer (ncclDebugLog): anything much longer is
    // not NCCL's, and std::regex recursion on megabyte lines could exhaust the stack.
    if (raw.size() > kMaxLineChars) continue;
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
      w.error.kind = kind_of_return_code(w.trace_code, false);
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
  for (const auto& key : process_order_) {
    Process& p = processes_[key];
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
  if (using_network_line_)
    s_.network_evidence =
        "Using network " + *s_.network + " (line " + std::to_string(*using_network_line_) + ")";
  else if (s_.network)
    s_.network_evidence = "channel lines via NET/" + *s_.network;
  if (!s_.network && plugin_net_name_) {
    s_.network = plugin_net_name_;
    s_.network_evidence =
        "the " + *plugin_net_name_ + " net plugin's own NET/" + *plugin_net_name_ + " lines";
  }
  // Neither a `Using network` line nor channel lines (NCCL 2.4-2.7, or a log cut before the
  // channels were set up): NCCL initialised IB first and fell back to its socket transport only
  // when IB had no device or was disabled, so the init lines name the network. NCCL 2.4's
  // bootstrap prints its own `NET/Socket : Using` before the IB line: a socket line only counts
  // against IB when the same process printed it after its IB line.
  if (!s_.network && !s_.plugin) {
    const auto at = [](const char* what, int line) {
      return std::string(what) + " (line " + std::to_string(line) + ")";
    };
    bool socket_after_ib = false;
    for (const auto& [key, p] : processes_)
      socket_after_ib = socket_after_ib || (p.ib_using_line && p.last_socket_using_line &&
                                            *p.last_socket_using_line > *p.ib_using_line);
    if (ib_using_line_ && !ib_no_device_line_ && !s_.ib_disabled && !socket_after_ib) {
      s_.network = "IB";
      s_.network_evidence = at("NET/IB : Using", *ib_using_line_) +
                            " and no socket transport initialised after it in the same process; "
                            "NCCL < 2.8 prints no `Using network`";
    } else if (socket_using_line_) {
      s_.network = "Socket";
      s_.network_evidence =
          (ib_no_device_line_ ? at("NET/IB : No device found", *ib_no_device_line_) + ", then "
           : s_.ib_disabled   ? std::string("IB disabled, then ")
           : socket_after_ib  ? std::string("NET/IB, then ")
                              : std::string("no NET/IB line, ")) +
          at("NET/Socket : Using", *socket_using_line_) + "; NCCL < 2.8 prints no `Using network`";
    }
  }
  // NET/OFI lines mean the OFI plugin carried the traffic, unless it failed to start (then
  // nothing says what NCCL used) and no line names its network.
  bool ofi_failed = false;
  for (const auto& e : s_.errors) ofi_failed = ofi_failed || e.kind == "plugin_init_failed";
  if (!s_.network && s_.plugin == std::string("aws-ofi-nccl") &&
      (!ofi_failed || ofi_network_named_)) {
    s_.network = "AWS Libfabric";
    s_.network_evidence =
        "NET/OFI lines: the aws-ofi-nccl plugin carried the traffic" +
        (s_.ofi_provider ? " over libfabric provider " + *s_.ofi_provider : std::string());
  }
  if (!s_.network && inferred_network_) {
    s_.network = inferred_network_;
    s_.network_evidence = inferred_evidence_;
  }
  // NCCL reports RoCE as network "IB"; the link layer is in the `NET/IB : Using` list. Decide by
  // the devices the channels used when known, else by all listed devices.
  if (s_.network == std::string("IB") && !s_.hcas.empty()) {
    bool all_roce = true, any = false;
    for (size_t i = 0; i < s_.hcas.size(); ++i) {
      if (!net_devices_used_.empty() && !net_devices_used_.count(static_cast<int>(i))) continue;
      any = true;
      all_roce = all_roce && s_.hca_link_layers[i] == "RoCE";
    }
    if (any && all_roce) s_.network = "RoCE";
  }
  for (auto& v : s_.ranks)
    v.who = v.rank ? "rank " + std::to_string(*v.rank) + (v.host.empty() ? "" : " (" + v.host + ")")
                   : v.host + (v.pid >= 0 ? ":" + std::to_string(v.pid) : "");
  book_.finish(s_);
  return std::move(s_);
}

}  // namespace

NcclLogSummary parse_nccl_logs(const std::vector<NcclLogInput>& inputs) {
  Parser p;
  for (const auto& in : inputs) p.feed(in.name, in.text);
  return p.finish();
}

NcclLogSummary parse_nccl_log(const std::string& text) {
  Parser p;  // no copy of the text: logs reach hundreds of MB
  p.feed("", text);
  return p.finish();
}

}  // namespace fabkit::nccl_log
