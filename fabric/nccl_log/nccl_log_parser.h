// The parser's state across the lines of one or more logs: what each process printed and what
// decides the network. Shared by nccl_log_parse.cc (reading lines, errors, the cause) and
// nccl_log_network.cc (NCCL's init facts and the network decision). Internal to fabric/nccl_log.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_log/nccl_log_classify.h"
#include "fabric/nccl_log/nccl_log_failures.h"
#include "fabric/nccl_log/nccl_log_line.h"

namespace fabkit::nccl_log::detail {

using sv = std::string_view;

// NCCL formats a log line into a 1024-byte buffer (ncclDebugLog): anything much longer is not
// NCCL's, and std::regex recursion on megabyte lines could exhaust the stack. Such a line is
// counted and skipped, so a reader fed in pieces keeps no more than this of a line.
inline constexpr size_t kMaxLineChars = 4096;

// The parser's other lists, each bounded so memory does not follow the log's size. Far above
// a real job's: 64 `Using network` lines say all there is to say about a mix of networks; a
// job's processes are its ranks (the largest run about 100k GPUs over 12k+ nodes, logged per
// node); unruled WARNs are rare (a handful per failing process).
inline constexpr size_t kMaxNetworksSeen = 64;
inline constexpr size_t kMaxProcesses = 65536;
inline constexpr size_t kMaxUnruledWarnings = 10000;
inline constexpr size_t kMaxAddressChangeHosts = 4096;
inline constexpr size_t kMaxNetDevices = 4096;
inline constexpr size_t kMaxIbEvents = 64;  // distinct IB async events x ports
// PyTorch's takedown lines kept until the end (one per rank and process group in a real log).
inline constexpr size_t kMaxTakedowns = 4096;

inline bool has(sv s, sv sub) { return s.find(sub) != sv::npos; }
inline bool starts(sv s, sv p) { return s.substr(0, p.size()) == p; }

// A line that says a process was still waiting when the log ends (a connect it kept retrying,
// c10d's store barrier with a rank missing): a failure only when no error line says more, so it
// is kept aside until finish().
struct Stall {
  LogLine line;       // its origin; msg and nccl_file are not kept (they point into the input)
  std::string text;   // the message
  std::string source;
  int lineno = 0;
};

// What one process printed that decides the network or explains its failure.
struct Process {
  size_t view = SIZE_MAX;  // index into s.ranks, or SIZE_MAX when past the cap
  std::optional<int> ib_using_line, last_socket_using_line;
  bool has_error = false;
  int info_lines = 0;           // NCCL INFO lines: with them, a failed call leaves an error trace
  int last_plain_warning = -1;  // index into plain_warnings_ of its latest unruled WARN
  int trace_code = 0, trace_line = 0;
  std::string trace_text;
  bool trace_bootstrap = false;
  std::string source;
  std::string host;
  std::optional<int> rank;
  long order = 0;
  std::optional<Stall> connect_retry;  // its latest NCCL lines are connect retries
  bool bootstrap_over_socket = false;  // its error trace went net_socket -> bootstrap (NCCL 2.3)
};

class Parser {
 public:
  // One input: begin, then its lines (without the newline) in order.
  void begin(const std::string& source);
  void feed_line(sv raw);
  // begin(source) and every line of text.
  void feed(const std::string& source, const std::string& text);
  NcclLogSummary finish();

 private:
  void line(const std::string& source, int lineno, sv raw);
  // The rows of a physical line that a terminal paste joined (padded_rows), each read as a line.
  static std::vector<sv> padded_rows(sv raw);
  void physical_row(const std::string& source, int lineno, sv raw);
  void nccl_facts(const LogLine& l, const std::string& msg, int lineno, Process* p);
  void note_network_seen(const std::string& net);
  void infer_from_error(const ClassifiedMessage& c, sv msg, int lineno);
  Process* process_of(const LogLine& l, const std::string& source);
  Process* lookup_process(const LogLine& l, const std::string& source);
  void add_error(const ClassifiedMessage& c, const LogLine& l, Process* p,
                 const std::string& source, int lineno, sv text);
  static bool c10d_line(sv raw);
  // Lines that are not NCCL's or PyTorch's glog yet tell an NCCL job's failure: a process killed
  // by SIGBUS, a Python traceback through torch.distributed, c10d's store barrier. True when the
  // line was taken.
  bool job_line(const LogLine& l, Process* p, const std::string& source, int lineno, sv raw);
  void note_connect_retry(const LogLine& l, Process* p, const std::string& source, int lineno);
  void note_ib_event(const LogLine& l, const Process* p, const std::string& source, int lineno);
  // Book the stalls when nothing else failed (finish()).
  void book_stalls();
  void book_error(NcclLogError e, Process* p);
  // True when the line completed a wrapped error (then booked under the wrap's start).
  bool continue_wrap(const LogLine& l, sv raw);
  // The network NCCL used, from the facts gathered (nccl_log_network.cc); in finish().
  void decide_network();

  NcclLogSummary s_;
  std::string source_;  // of the input being read (begin)
  int lineno_ = 0;      // of the line being read, in that input
  std::set<int> net_devices_used_;
  std::optional<int> using_network_line_, ib_using_line_, socket_using_line_, ib_no_device_line_;
  std::optional<std::string> inferred_network_, inferred_evidence_;
  // The process whose error trace through a transport inferred the network: if its trace goes on
  // into bootstrap.cc, the transport carried the bootstrap (NCCL <= 2.3), not the data.
  Process* inferred_by_trace_ = nullptr;
  std::map<std::string, Process> processes_;
  std::vector<Process*> process_order_;  // into processes_, in first-seen order
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
    int trace_code;         // the first error trace its process printed after it; 0: none
    bool trace_bootstrap;   // that trace went on through bootstrap.cc
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
  // The newest wrapped error of the wrapper tier (an exception's "unhandled system error"), and
  // the order a `Last error:` text being booked explains (add_error copies it; 0: none).
  long last_wrapper_order_ = 0;
  std::string last_wrapper_kind_;
  long explains_ = 0;
  // GID/LID table changes by host, booked only when a completion error follows there.
  bool defer_ = false;
  std::map<std::string, std::pair<NcclLogError, Process*>> address_changes_;
  std::vector<std::pair<NcclLogError, Process*>> takedowns_;
  FailureBook book_;
  std::optional<Stall> store_barrier_;  // c10d's store barrier waiting, not yet completed
  bool dist_traceback_ = false;         // inside a Python traceback through torch/distributed/
};

}  // namespace fabkit::nccl_log::detail
