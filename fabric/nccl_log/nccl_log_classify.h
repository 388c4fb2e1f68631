// Which failure kind (nccl_failure_kinds.h) one message tells, and the peer it names. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "fabric/nccl_log/nccl_log_line.h"

namespace fabkit::nccl_log {

// The detail of PyTorch's "Some NCCL operations have failed or timed out" (the watchdog taking the
// process down): a watchdog timeout only when no other line of the log names an error.
inline constexpr const char* kWatchdogTakedownDetail =
    "PyTorch took the process down: a collective failed or timed out (no watchdog line)";

struct ClassifiedMessage {
  std::string kind;
  std::string peer;  // "10.0.0.2<45763>", "node1<57557>": the other end the message names
  std::string
      detail;  // "status 12", "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, ..., Timeout(ms)=600000)"
};

// `last_error`: the line follows PyTorch's or NCCL's "Last error:", so it is NCCL's own WARN text
// without its prefix. Returns nothing for a line that is no error (INFO chatter, benign plugin
// probing, another program's output).
// A WARN that the port's GID or LID table changed (NCCL carries on; its queue pairs may not).
bool address_change_event(std::string_view msg);
// A work completion error of the RDMA NIC (transport_retry_exceeded, work_request_flushed, ...).
bool is_completion_kind(std::string_view kind);

std::optional<ClassifiedMessage> classify_message(std::string_view msg, LineSource source,
                                                  bool last_error);

// A socket's failure told by its errno text or NCCL's connect wording ("Connection reset by
// peer", "Call to connect returned Connection refused"): for lines that are not NCCL's WARN but
// are known to be about one of its or c10d's sockets (a retry, a torch.distributed traceback).
std::optional<ClassifiedMessage> classify_socket_error(std::string_view msg);

// A WARN that NCCL carries on from: a setting it corrected, an optional feature it turned off,
// an HCA event that is no error ("Got non-fatal async event", "port active", "GID table changed").
bool benign_warning(std::string_view msg);

// PyTorch's, Gloo's and nccl-tests' texts, and NCCL's own summaries (ncclSystemError, "unhandled
// cuda error"): they wrap an error told elsewhere, or tell c10d's own rendezvous failing
// (nccl_log_classify_torch.cc).
std::optional<ClassifiedMessage> classify_wrapper_text(std::string_view msg);

// The kind of an unclassified WARN by where NCCL's call is ("graph/xml.cc:637": topology
// detection; "misc/nvmlwrap.cc:70": NVML); null when the file says nothing more than the text.
const char* kind_of_source_file(std::string_view file);

// "file.cc:123 -> 6": NCCL's error trace at INFO level, with the ncclResult_t code; 0 when the
// message is not such a line.
int trace_return_code(std::string_view msg);

}  // namespace fabkit::nccl_log
