// The message texts matched here come from NCCL's WARN calls (src/misc/socket.cc, ibvwrap.cc,
// transport/net_ib.cc, alloc.h, bootstrap.cc), from net plugins (NET/IBext's ib_plugin.c,
// aws-ofi-nccl's NET/OFI) and from PyTorch's ProcessGroupNCCL; each rule is exercised by a real
// log in tests/fixtures/nccl_log/real (README.md there gives the thread each came from).
#include "fabric/nccl_log/nccl_log_classify.h"

#include <algorithm>
#include <cctype>

namespace fabkit::nccl_log {
namespace {

using sv = std::string_view;

bool has(sv s, sv sub) { return s.find(sub) != sv::npos; }

bool has_ci(sv s, sv sub) {
  return std::search(s.begin(), s.end(), sub.begin(), sub.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         }) != s.end();
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The first "name<port>" token: NCCL prints peers as address<port>.
std::string peer_of(sv msg) {
  for (size_t lt = msg.find('<'); lt != sv::npos; lt = msg.find('<', lt + 1)) {
    size_t i = lt + 1;
    while (i < msg.size() && is_digit(msg[i])) ++i;
    if (i == lt + 1 || i >= msg.size() || msg[i] != '>') continue;
    size_t start = lt;
    while (start > 0 && msg[start - 1] != ' ' && msg[start - 1] != '(') --start;
    if (start == lt) continue;
    return std::string(msg.substr(start, i + 1 - start));
  }
  return {};
}

// The number after "with error " / "status=" in NCCL's completion warnings; -1 when absent.
int completion_status(sv msg) {
  for (sv key : {sv("status="), sv("with error "), sv("status ")}) {
    const size_t p = msg.find(key);
    if (p == sv::npos) continue;
    size_t i = p + key.size();
    int v = 0, n = 0;
    while (i < msg.size() && is_digit(msg[i]) && n < 4) v = v * 10 + (msg[i++] - '0'), ++n;
    if (n > 0) return v;
  }
  return -1;
}

// ibv_wc_status names (infiniband/verbs.h), for the message of an unruled status.
const char* wc_status_name(int s) {
  static const char* names[] = {"success",
                                "local length error",
                                "local QP operation error",
                                "local EE context operation error",
                                "local protection error",
                                "work request flushed",
                                "memory window bind error",
                                "bad response",
                                "local access error",
                                "remote invalid request",
                                "remote access error",
                                "remote operation error",
                                "transport retry counter exceeded",
                                "RNR retry counter exceeded",
                                "local RDD violation",
                                "remote invalid RD request",
                                "remote aborted",
                                "invalid EE context number",
                                "invalid EE context state",
                                "fatal error",
                                "response timeout",
                                "general error"};
  return s >= 0 && s < 22 ? names[s] : "unknown status";
}

std::optional<ClassifiedMessage> make(const char* kind, sv msg, std::string detail = {}) {
  return ClassifiedMessage{kind, peer_of(msg), std::move(detail)};
}

// Rules for text that states an error by itself: NCCL WARN lines and `Last error:` lines.
std::optional<ClassifiedMessage> classify_error_text(sv msg) {
  if (has(msg, "out of memory") || has(msg, "Failed to CUDA calloc") ||
      has(msg, "Failed to CUDA malloc") || has(msg, "cudaErrorMemoryAllocation"))
    return make("out_of_memory", msg);
  if ((has(msg, "ibv_reg_") && has_ci(msg, "fail")) || has(msg, "Unable to register memory"))
    return make("ibv_reg_mr_failed", msg);
  if (has_ci(msg, "completion") && completion_status(msg) >= 0) {
    const int st = completion_status(msg);
    std::string detail = "status " + std::to_string(st) + " (" + wc_status_name(st) + ")";
    if (st == 12) return make("transport_retry_exceeded", msg, detail);
    if (st == 13) return make("rnr_retry_exceeded", msg, detail);
    if (st == 5) return make("work_request_flushed", msg, detail);
    if (st == 4) return make("local_protection_error", msg, detail);
    if (st == 10) return make("remote_access_error", msg, detail);
    return make("completion_error", msg, detail);
  }
  if (has(msg, "posix_fallocate") || has(msg, "/dev/shm") || has(msg, "shared memory segment") ||
      has(msg, "ncclShmOpen"))
    return make("shm_exhausted", msg);
  if (has(msg, "Duplicate GPU detected")) return make("nccl_invalid_usage", msg);
  // A receive larger than the buffer the peer posted ("NET/Socket : message truncated : receiving
  // 696320 bytes instead of 32768", bootstrap's "Message truncated : received 256 bytes instead of
  // 4"): the ranks disagree on the call (count, type, order) or on NCCL_PROTO; NCCL >= 2.12
  // returns ncclInvalidUsage for it.
  if (has_ci(msg, "message truncated")) return make("nccl_invalid_usage", msg, "message truncated");
  // aws-ofi-nccl's completion errors: "NET/OFI Request 0x.. completed with error. RC: 113. Error:
  // 2 (UNDELIVERABLE)" — the libfabric counterpart of an RDMA work completion error.
  if (has(msg, "NET/OFI") && has(msg, "completed with error"))
    return make("completion_error", msg, "OFI request error");
  // Its completion path meeting a completion it cannot match ("NET/OFI Unexpected status (0) for
  // message 246", "Write complete from unexpected request type!"): the transfer failed there.
  if (has(msg, "NET/OFI") && (has(msg, "Unexpected status") || has(msg, "unexpected request type")))
    return make("completion_error", msg, "OFI completion not matched");
  // The HCA's asynchronous events (NET/IB : Got async event : port error / local catastrophic
  // error; 2.2x: "async fatal event on QP (..): local access violation work queue error"); events
  // that are no error (port active, GID or LID change) fall through to the generic warning.
  if ((has(msg, "async event") || has(msg, "async fatal event")) &&
      (has_ci(msg, "error") || has_ci(msg, "fatal") || has_ci(msg, "catastrophic")))
    return make("ib_async_error", msg);
  if (has(msg, "ibv_get_async_event") && has_ci(msg, "fail")) return make("ib_async_error", msg);
  if (has(msg, "ibv_modify_qp")) return make("qp_transition_failed", msg);
  if (has(msg, "ibv_create_cq")) return make("cq_create_failed", msg);
  if (has(msg, "ibv_create_qp")) return make("qp_create_failed", msg);
  if (has(msg, "libibverbs") && (has_ci(msg, "failed to open") || has_ci(msg, "cannot open") ||
                                 has_ci(msg, "not found") || has(msg, "No such file")))
    return make("libibverbs_missing", msg);
  if (has_ci(msg, "no socket interface found") || has(msg, "no interface found") ||
      has(msg, "neither AF_INET") || has(msg, "NCCL_SOCKET_IFNAME interface found") ||
      // A socket made for the family of an address never found (nccl#210: no IP interface).
      (has(msg, "Socket creation failed") && has(msg, "Address family not supported")))
    return make("no_socket_interface", msg);
  // A connect that failed is a connect failure whatever the reason it gives: "Net : Connect to
  // 172.17.0.2<40537> failed : Connection reset by peer" (the peer reset the handshake).
  if ((has(msg, "Connect to ") && has_ci(msg, "fail")) || has(msg, "Call to connect") ||
      msg.substr(0, 11) == "Connect to ")  // include/socket.h "Connect to %s failed : %s"
    return make("connect_failed", msg);
  if (has(msg, "Connection reset by peer")) return make("peer_reset", msg);
  if (has(msg, "Broken pipe")) return make("broken_pipe", msg);
  if (has(msg, "Connection closed by remote peer") || has(msg, "Connection closed by peer"))
    return make("peer_closed", msg);
  if (has_ci(msg, "Timeout waiting for connect")) return make("connect_timeout", msg);
  if (has_ci(msg, "bootstrap") &&
      (has_ci(msg, "timeout") || has_ci(msg, "timed out") || has_ci(msg, "mismatch")))
    return make("bootstrap_failed", msg);
  // bootstrap.cc's root refusing a check-in: "Bootstrap Root : rank 1 of 8 ranks has already
  // checked in" (two processes claimed one rank, or two jobs share a unique id).
  if (has(msg, "Bootstrap Root") || has(msg, "has already checked in"))
    return make("bootstrap_failed", msg);
  // graph/rings.cc and graph/trees.cc's consistency checks of the rings every rank computed
  // ("ring 0 does not loop back to start (14 != 0)"): NCCL returns ncclInternalError; the ranks
  // saw different topologies (NCCL_HOSTID, mixed NCCL versions or settings).
  if (has(msg, "does not loop back to start") || has(msg, "does not contain rank"))
    return make("nccl_internal_error", msg, "ranks computed inconsistent rings");
  if (has(msg, "Connection refused") || has(msg, "Software caused connection abort") ||
      has(msg, "Connection timed out") || has(msg, "No route to host") ||
      has(msg, "Network is unreachable") || has(msg, "socketPollConnect") ||
      has(msg, "socketStartConnect") || has(msg, "Accept failed"))
    return make("connect_failed", msg);
  if (has(msg, "Cuda failure") || has(msg, "CUDA error") || has(msg, "unhandled cuda error") ||
      has(msg, "ncclUnhandledCudaError") ||
      has(msg, "CUDA IPC handle"))  // p2p.cc: "failed to open CUDA IPC handle : 217 peer access"
    return make("cuda_error", msg);
  // benign_plugin_line() has already let through the "not found, using internal" probing.
  if ((has(msg, "NET/Plugin") || has(msg, "NET/OFI")) &&
      (has_ci(msg, "fail") || has_ci(msg, "unable") || has_ci(msg, "error") ||
       has(msg, "returned") || has(msg, "undefined symbol") || has(msg, "Couldn't")))
    return make("plugin_init_failed", msg);
  // A proxy's Connect that failed with a system error (2) is the transport's connect failing;
  // with a remote error (6) it only saw the peer go (nccl_795: a Broken pipe before it).
  if ((has(msg, "operation=Connect") || has(msg, "operation Connect")) &&
      (has(msg, "res=2,") || has(msg, "retcode 2")))
    return make("connect_failed", msg);
  if (has(msg, "[Proxy Service") || has(msg, "Socket recv failed while polling") ||
      has(msg, "Could not receive type from localRank") ||
      has(msg, "Error encountered progressing operation"))
    return make("proxy_failed", msg);
  return std::nullopt;
}

// PyTorch's and nccl-tests' summaries: they wrap an error told on another line.
std::optional<ClassifiedMessage> classify_wrapper_text(sv msg) {
  if (has(msg, "Watchdog caught collective operation timeout") || has(msg, "watchdog got stuck")) {
    const size_t w = msg.find("WorkNCCL(");
    // "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, ..., Timeout(ms)=600000)": the ')' of "(ms)" is not
    // the end.
    const size_t t = w == sv::npos ? sv::npos : msg.find("Timeout(ms)", w);
    const size_t e = w == sv::npos ? sv::npos : msg.find(')', t == sv::npos ? w : t + 11);
    return make("watchdog_timeout", msg,
                e == sv::npos ? std::string() : std::string(msg.substr(w, e + 1 - w)));
  }
  if (has(msg, "store->get(") || (has(msg, "ncclUniqueId") && has_ci(msg, "timeout")))
    return make("bootstrap_failed", msg);
  if (has(msg, "ncclRemoteError") || has(msg, "remote process exited or there was a network error"))
    return make("nccl_remote_error", msg);
  if (has(msg, "ncclSystemError") || has(msg, "unhandled system error"))
    return make("nccl_system_error", msg);
  if (has(msg, "ncclUnhandledCudaError") || has(msg, "unhandled cuda error") ||
      has(msg, "Test CUDA failure") ||  // nccl-tests' own CUDA call failed
      // "[Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory
      // access was encountered": the watchdog met a CUDA error, not a timeout.
      has(msg, "CUDA error: "))
    return make("cuda_error", msg);
  if (has(msg, "ncclInvalidUsage") || has(msg, "ncclInvalidArgument") ||
      (has(msg, "NCCL error") && has(msg, "invalid usage")))
    return make("nccl_invalid_usage", msg);
  if (has(msg, "ncclInternalError") || (has(msg, "NCCL error") && has(msg, "internal error")) ||
      (has(msg, "Test NCCL failure") && has(msg, "internal error")))
    return make("nccl_internal_error", msg);
  return std::nullopt;
}

// Plugin probing that is no failure: NCCL looks for the newest plugin ABI first and says so for
// each version it does not find, then loads an older one (or uses its internal transports).
bool benign_plugin_line(sv msg) {
  return (has(msg, "Failed to find nccl") && has(msg, "Plugin")) ||  // _vN symbol / (>= v5)
         has(msg, "No plugin found") || has(msg, "TUNER/Plugin") || has(msg, "PROFILER/Plugin") ||
         (has(msg, "Plugin load") && (has(msg, "returned 2") || has(msg, "No such file"))) ||
         has(msg, "Using internal");
}

}  // namespace

std::optional<ClassifiedMessage> classify_message(sv msg, LineSource source, bool last_error) {
  if (msg.empty()) return std::nullopt;
  // Most INFO lines state nothing wrong: only these words can (this runs on every line).
  if (source == LineSource::kNcclInfo && !last_error && !has(msg, "ibv_") && !has(msg, "NET/") &&
      !has(msg, "libibverbs"))
    return std::nullopt;
  if (benign_plugin_line(msg)) return std::nullopt;
  if (source == LineSource::kNcclWarn || last_error) {
    if (auto c = classify_error_text(msg)) return c;
    if (auto c = classify_wrapper_text(msg)) return c;
    if (source == LineSource::kNcclWarn) return make("nccl_warning", msg);
    return std::nullopt;
  }
  if (source == LineSource::kNcclInfo) {
    // INFO lines that still state a failure (NCCL >= 2.19 logs a missing libibverbs at INFO;
    // plugin loaders and the IB transport report failed calls at INFO in some versions).
    const bool verbs_fail = has(msg, "ibv_") && has_ci(msg, "failed");
    const bool plugin_fail = (has(msg, "NET/Plugin") || has(msg, "NET/OFI")) &&
                             (has_ci(msg, "fail") || has(msg, "returned") || has_ci(msg, "unable"));
    if (verbs_fail || plugin_fail || (has(msg, "libibverbs") && has_ci(msg, "failed")))
      return classify_error_text(msg);
    return std::nullopt;
  }
  return classify_wrapper_text(msg);
}

int trace_return_code(sv msg) {
  const size_t arrow = msg.find(" -> ");
  if (arrow == sv::npos || arrow == 0) return 0;
  // "misc/socket.cc:564 -> 2", "bootstrap.cc:868 -> 6 ncclSocketConnect()"
  const size_t colon = msg.rfind(':', arrow);
  if (colon == sv::npos || colon + 1 >= arrow || msg.substr(0, colon).find(' ') != sv::npos)
    return 0;
  for (size_t i = colon + 1; i < arrow; ++i)
    if (!is_digit(msg[i])) return 0;
  size_t i = arrow + 4;
  int v = 0, n = 0;
  while (i < msg.size() && is_digit(msg[i]) && n < 3) v = v * 10 + (msg[i++] - '0'), ++n;
  return n ? v : 0;
}

}  // namespace fabkit::nccl_log
