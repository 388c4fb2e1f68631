// Parser of NCCL_DEBUG=INFO logs: which network NCCL really used, over which HCAs, with or
// without GPUDirect RDMA, and what went wrong. Pure: text in, summary out.
// The trap it avoids: NCCL prints `NET/Socket` and `Bootstrap` lines even when IB carries the
// traffic (the bootstrap and the OOB channel are always TCP). The decision is the `Using network`
// line and the `via NET/<name>/...` channel lines, never the mere presence of NET/Socket.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/finding.h"
#include "common/json.h"

namespace fabkit::nccl_log {

// One error line. `kind` names an entry of failure_kinds() (nccl_failure_kinds.h).
struct NcclLogError {
  int line = 0;       // 1-based line number in its source
  std::string kind;   // ibv_reg_mr_failed, transport_retry_exceeded, watchdog_timeout, ...
  std::string text;   // the message (without its host:pid:tid and launcher prefixes)
  std::string cause;  // the kind's meaning
  std::string fix;
  std::string source;  // the file it came from ("" for a single unnamed input)
  std::string who;     // "rank 5", "host:pid", "host" — who said it
  std::string host;
  std::optional<int> rank;
  std::string peer;     // the other end it names ("10.0.0.2<45763>")
  std::string detail;   // "status 12 (transport retry counter exceeded)", WorkNCCL(...)
  double time_s = 0;    // with time_format: when it was said
  int time_format = 0;  // 0 none, 1 absolute, 2 glog month-day (nccl_log_line.h)
  long order = 0;       // position across all sources, for "first" without times
  // Told by a framework's text (an exception, a glog line) rather than by NCCL's own INFO/WARN
  // line: of two errors of one kind, NCCL's line says who had it (not serialised).
  bool wrapped = false;
  // A `Last error:` text that explains an exception's return-code summary ("unhandled system
  // error ... Last error: [Service thread] ..."): that summary's `order`; 0 when none. Of two
  // kinds of one tier, the explanation names the cause (not serialised).
  long explains = 0;
};

// The errors of one kind, with the first that said it: the unit the judge and reports speak of.
struct NcclFailure {
  std::string kind;
  std::string role;                  // "cause" | "consequence" | "condition"
  size_t first_error = 0;            // index into NcclLogSummary::errors
  int count = 0;                     // error lines of this kind
  std::vector<std::string> said_by;  // distinct `who` values, in order (at most 64)
};

// What one process (a rank, or host:pid when the log has no rank) printed.
struct NcclRankView {
  std::string who;
  std::string host;
  long pid = -1;
  std::optional<int> rank;
  int cuda_dev = -1;
  int lines = 0;
  std::optional<std::string> network;  // its `Using network` line
  int errors = 0;
  std::optional<std::string> first_error_kind;
  int first_error_line = 0;
  std::string source;
};

// The IB asynchronous events NCCL's WARN lines reported, one entry per event and port: the one
// trace a subnet manager's or a link's event leaves in a job's log (nccl_log_ib_events.cc).
struct NcclIbEvent {
  std::string event;   // libibverbs' name: "client reregistration", "port error", ...
  std::string device;  // "mlx5_0:1" when the lines name it (NCCL 2.12+), else ""
  int count = 0;
  bool benign = false;  // a job carries on after it (NCCL does)
  std::string meaning;
  int first_line = 0;
  std::string source;
  std::string first_who;
};

struct NcclChannelLine {
  int line = 0;
  std::string network;  // "IB", "Socket", "AWS Libfabric", ...
  int device = -1;
  bool gdr = false;
};

struct NcclLogSummary {
  std::optional<std::string> version;            // "2.18.5+cuda12.2"
  std::optional<std::string> network;            // "IB" | "RoCE" | "Socket" | plugin name
  std::optional<std::string> network_evidence;   // "Using network IB (line 12)"
  std::vector<std::string> networks_seen;        // every `Using network` value, in order
  std::vector<std::string> hcas;                 // "mlx5_0:1" from `NET/IB : Using`
  std::vector<std::string> hca_link_layers;      // "IB" | "RoCE", parallel to hcas
  std::optional<std::string> ib_oob_interface;   // "eth0:10.0.0.1<0>" from `; OOB ...`
  std::vector<std::string> socket_interfaces;    // from `NET/Socket : Using`
  std::optional<std::string> bootstrap_interface;  // "eth0:10.0.0.1<0>"
  std::optional<std::string> plugin;             // net plugin that loaded, when one did
  std::optional<std::string> plugin_path;        // the file NCCL loaded it from, when it says
  std::optional<std::string> plugin_version;     // the plugin's own version ("1.14.2", "3.1.8")
  bool plugin_absent = false;                    // "No plugin found": internal IB/Socket used
  std::optional<bool> gdr;                       // null: no network channel lines seen
  int net_channel_lines = 0;
  int intra_node_channel_lines = 0;              // P2P / SHM channels (no network involved)
  bool ib_disabled = false;                      // NCCL_IB_DISABLE seen, or IB init failed
  bool ib_no_device = false;                     // "NET/IB : No device found."
  std::vector<NcclLogError> errors;
  int lines = 0;
  // What the classifier adds (docs/nccl-log.md):
  std::optional<std::string> ofi_provider;  // aws-ofi-nccl's "Selected Provider is X"
  int nccl_lines = 0;                       // lines NCCL printed (INFO or WARN)
  int torch_nccl_lines = 0;                 // PyTorch ProcessGroupNCCL / NCCL exception lines
  int plugin_lines = 0;                     // NET/Plugin and NET/OFI init lines
  std::vector<std::string> sources;         // the files read, in order
  std::vector<NcclFailure> failures;        // by kind; the cause first
  std::vector<NcclIbEvent> ib_events;       // in first-seen order, at most 64 kinds x ports
  std::optional<std::string> cause_kind;    // the failure that came first; null: none
  bool order_by_time = false;               // cause chosen by the lines' times, not position
  std::vector<NcclRankView> ranks;          // per rank / process, in first-seen order
  int ranks_dropped = 0;                    // processes past the view's cap
  // What the parser's other caps left out: every list it keeps is bounded, whatever the log's
  // size (a flood of lines of one shape cannot grow its memory).
  long networks_seen_dropped = 0;     // `Using network` values past the first 64
  long untracked_process_lines = 0;   // lines of processes past the first 65,536: no state kept
  long unruled_warnings_dropped = 0;  // WARNs without a rule past the first 10,000, not judged
  long ib_events_dropped = 0;         // event lines of kinds x ports past the first 64
};

struct NcclLogInput {
  std::string name;  // the file name, or "" for one unnamed text
  std::string text;
};

namespace detail {
class Parser;
}

// Logs read in pieces as they arrive (a file or a pipe read a buffer at a time): the text is never
// held whole, so memory is what the summary keeps (its lists are capped), whatever the log's size.
// The same summary as parse_nccl_logs over the same texts.
class NcclLogReader {
 public:
  NcclLogReader();
  ~NcclLogReader();
  NcclLogReader(const NcclLogReader&) = delete;
  NcclLogReader& operator=(const NcclLogReader&) = delete;
  // Starts the next input: its name ("" for one unnamed text).
  void begin(const std::string& name);
  // Bytes of the input begun last, cut anywhere (mid-line too).
  void feed(std::string_view piece);
  NcclLogSummary finish();

 private:
  void end_input();
  std::unique_ptr<detail::Parser> parser_;
  std::string partial_;  // a line not yet ended, at most one byte past the longest line read
  bool begun_ = false;
};

NcclLogSummary parse_nccl_log(const std::string& text);
// Several logs of one job (one per rank or node): one summary, the cause across all of them.
NcclLogSummary parse_nccl_logs(const std::vector<NcclLogInput>& inputs);
Json to_json(const NcclLogSummary& s);
// expected_network: what the caller meant to use ("IB", "RoCE", "Socket", a plugin name).
std::vector<Finding> judge_nccl_log(const NcclLogSummary& s,
                                    std::optional<std::string> expected_network);

}  // namespace fabkit::nccl_log
