// The message texts matched here come from the format strings of NCCL's WARN calls (2.0 to 2.30:
// misc/socket.cc and include/socket.h, bootstrap.cc, proxy.cc, misc/ibvwrap.cc, transport/net_ib*,
// transport/net_socket.cc, misc/shmutils.cc, transport/p2p.cc, misc/cudawrap.cc,
// misc/nvmlwrap.cc, graph/*, init.cc, enqueue.cc, include/alloc.h, include/checks.h) and from net
// plugins (NET/IBext's ib_plugin.c, aws-ofi-nccl's NCCL_OFI_WARN "NET/OFI ..."). Rules prefer what
// a whole family of messages shares (the call that failed, the errno text it prints, the object
// it names) over one wording, so that a version's new phrasing still lands in its kind;
// tests/unit/nccl_log/source_lines.tsv instantiates every format string with the kind it must get.
// PyTorch's texts are in nccl_log_classify_torch.cc.
#include "fabric/nccl_log/nccl_log_classify.h"

#include "fabric/nccl_log/nccl_log_ib_events.h"
#include "fabric/nccl_log/nccl_log_match.h"

namespace fabkit::nccl_log {
namespace {

using namespace match;

// The number of an ibv_wc_status in NCCL's completion warnings: "with error 12" (2.4-2.19),
// "status=12" (2.19-2.27), "status=IBV_WC_RETRY_EXC_ERR(12)" (2.28+); -1 when absent.
int completion_status(sv msg) {
  for (sv key : {sv("status="), sv("with error "), sv("status ")}) {
    const size_t p = msg.find(key);
    if (p == sv::npos) continue;
    size_t i = p + key.size();
    if (key == "status=") {  // skip the status name to its "(N)"
      size_t j = i;
      while (j < msg.size() && (std::isupper(static_cast<unsigned char>(msg[j])) || msg[j] == '_'))
        ++j;
      if (j > i && j < msg.size() && msg[j] == '(') i = j + 1;
    }
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

}  // namespace

// net_ib.cc's ncclIbGetPciPath (2.7+): "Could not find real path of rxe0
// (/sys/class/infiniband/rxe0/device)": an RDMA device with no PCI device behind it (soft-RoCE's
// rxe, a virtual function's view in some containers); NCCL warns, returns success and uses the
// device without PCI locality. graph/xml.cc's getPciPath names a /sys path instead and fails.
static bool ib_device_without_pci_path(sv msg) {
  constexpr sv kTag = "Could not find real path of ";
  const size_t at = msg.find(kTag);
  return at != sv::npos && at + kTag.size() < msg.size() && msg[at + kTag.size()] != '/';
}

// An IB async event a job carries on after ("client reregistration", "SM change", "port active").
static bool benign_ib_event(sv msg) {
  if (!has(msg, "async")) return false;
  const auto e = ib_async_event(msg);
  return e && e->benign;
}

bool benign_warning(sv msg) {
  return has(msg, "non-fatal") || has(msg, "GID table changed") || has_ci(msg, "port active") ||
         has_ci(msg, "GID table change") || has_ci(msg, "LID change") ||
         has(msg, "Cannot initialize CollNet") || has(msg, "is being ignored") ||
         has(msg, "maximum allowed, setting") || has(msg, "defaulting to") ||
         has(msg, "Limiting value to") || has(msg, "cap it to") || has(msg, ", ignoring") ||
         // graph/search.cc: no path for a ring/tree pattern, NCCL uses the simple order instead.
         has(msg, "falling back to simple order") || ib_device_without_pci_path(msg) ||
         benign_ib_event(msg);
}

namespace {

// Resources of this process: GPU or host memory, /dev/shm, RDMA memory registration.
std::optional<ClassifiedMessage> classify_resources(sv msg) {
  // include/alloc.h and checks.h: "Failed to CUDA calloc|malloc|host alloc N bytes", "Failed to
  // malloc N bytes" (2.4: "malloc of N bytes failed"), "malloc(size=N) returned null"; 2.9-2.12
  // bootstrap.cc's remote allocator thread: "[Rem Allocator] Allocation failed (segment 0, fd N)"
  // after the CUDA allocation it makes for a peer failed.
  // NCCL 1.x's src/core.cu: "failed to allocate N byte device buffer", "rank N failed to
  // allocate device buffer", "failed to allocated device maps" (cudaMalloc failed, returned as
  // ncclCudaMallocFailed, whose text is "cuda malloc failed").
  if (has(msg, "out of memory") || (has(msg, "Failed to CUDA") && has(msg, "alloc")) ||
      has(msg, "cudaErrorMemoryAllocation") || has(msg, "Failed to malloc") ||
      has(msg, "malloc of ") || has(msg, "returned null") || has(msg, "Allocation failed") ||
      has(msg, "cuda malloc failed") ||
      ((has(msg, "failed to allocate") || has(msg, "failed to allocated")) &&
       (has(msg, "device buffer") || has(msg, "device maps") || has(msg, "device-side") ||
        has(msg, "device comm"))))
    return make("out_of_memory", msg);
  // ibv_reg_mr, ibv_reg_mr_iova2, ibv_reg_dmabuf_mr, a plugin's mlx5dv_reg_dmabuf_mr.
  if ((has(msg, "_reg_") && has_ci(msg, "fail")) ||
      (has_ci(msg, "register memory") &&
       (has(msg, "Unable") || has(msg, "Could not") || has_ci(msg, "fail"))))
    return make("ibv_reg_mr_failed", msg);
  // misc/shmutils.cc: "Error while creating|attaching to shared memory segment", "failed to
  // extend /dev/shm/nccl-x", "Could not map /dev/shm/...", "failed to create shared memory file".
  if (has(msg, "posix_fallocate") || has(msg, "/dev/shm") || has(msg, "shared memory segment") ||
      has(msg, "shared memory file") || has(msg, "ncclShmOpen"))
    return make("shm_exhausted", msg);
  return std::nullopt;
}

// The ranks or the application disagree: NCCL returns ncclInvalidUsage/ncclInvalidArgument.
std::optional<ClassifiedMessage> classify_usage(sv msg) {
  // A receive larger than the buffer the peer posted ("NET/Socket : message truncated : receiving
  // 696320 bytes instead of 32768", bootstrap's "Message truncated : received 256 bytes instead of
  // 4"): the ranks disagree on the call (count, type, order) or on NCCL_PROTO.
  if (has_ci(msg, "message truncated")) return make("nccl_invalid_usage", msg, "message truncated");
  if (has(msg, "Duplicate GPU detected") || has(msg, "using the same GPU") ||
      has_ci(msg, "collective mismatch") || has(msg, "Mismatched collective") ||
      has(msg, "posted incorrect receive info") || has(msg, "incompatible devices") ||
      has(msg, "is incompatible with the local") || has(msg, "Mismatched NCCL version") ||
      has(msg, "version mismatch") || has(msg, "before the previous operation returned") ||
      has(msg, "has already been destroyed") ||
      (has(msg, "No algorithm/protocol available") && !has(msg, "Error : no algorithm")) ||
      has(msg, "mismatchs with NCCL device") || has(msg, "is not a valid pointer") ||
      has(msg, "argument is NULL") || has(msg, " : invalid type") || has(msg, " : invalid root") ||
      has(msg, " : invalid reduction") || msg.substr(0, 8) == "Invalid " ||
      has_ci(msg, "invalid device count") || has(msg, "improper usage") ||
      has(msg, "not in a group call") || has(msg, "without a matching") ||
      has(msg, "not within valid range of ranks") || has(msg, "not initialized via") ||
      has(msg, "mixed local") ||  // "Detected mixed local Net device counts across ranks"
      // An application built against another NCCL ("compiled with NCCL version 2.21, but is
      // running with NCCL 2.18"), NCCL_NET naming a network that is not there.
      has(msg, "compiled with NCCL version") || has(msg, "compiled with too old version") ||
      has(msg, "Couldn't find net with name") || (has(msg, "network ") && has(msg, "not found.")))
    return make("nccl_invalid_usage", msg);
  return std::nullopt;
}

// The RDMA NIC: completions, asynchronous events, verbs calls.
std::optional<ClassifiedMessage> classify_verbs(sv msg) {
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
  // aws-ofi-nccl's completion errors: "NET/OFI Request 0x.. completed with error. RC: 113. Error:
  // 2 (UNDELIVERABLE)", "Unable to read from fi_cq_readerr": the libfabric counterpart of an RDMA
  // work completion error.
  // 2.27+'s resilient IB transport: "NET/IB: Got CQE with error (devIndex=0, ..., qp_num=N)".
  if (has(msg, "CQE with error")) return make("completion_error", msg);
  if (has(msg, "NET/OFI") && (has(msg, "completed with error") || has(msg, "fi_cq_readerr")))
    return make("completion_error", msg, "OFI request error");
  // Its completion path meeting a completion it cannot match ("NET/OFI Unexpected status (0) for
  // message 246", "Write complete from unexpected request type!"): the transfer failed there.
  if (has(msg, "NET/OFI") && (has(msg, "Unexpected status") || has(msg, "unexpected request type")))
    return make("completion_error", msg, "OFI completion not matched");
  // The HCA's asynchronous events (2.4: "Got async event : port error"; 2.19: "mlx5_0:1 Got async
  // error event: local catastrophic error"; 2.21+: "async fatal event on QP (..): local access
  // violation work queue error"); events that are no error are benign_warning().
  if (has(msg, "async") && has(msg, "event") &&
      (has_ci(msg, "error") || has_ci(msg, "fatal") || has_ci(msg, "catastrophic")))
    return make("ib_async_error", msg);
  if (has(msg, "ibv_get_async_event") && has_ci(msg, "fail")) return make("ib_async_error", msg);
  if (has(msg, "ibv_modify_qp")) return make("qp_transition_failed", msg);
  if (has(msg, "ibv_create_cq")) return make("cq_create_failed", msg);
  if (has(msg, "create_qp")) return make("qp_create_failed", msg);  // ibv_ and mlx5dv_create_qp
  if (has(msg, "libibverbs") && (has_ci(msg, "failed to open") || has_ci(msg, "cannot open") ||
                                 has_ci(msg, "not found") || has(msg, "No such file")))
    return make("libibverbs_missing", msg);
  // The device itself: opening, querying, allocating a protection domain, polling its CQ.
  if (has(msg, "ibv_open_device") || has(msg, "ibv_alloc_pd") || has(msg, "ibv_get_device") ||
      has(msg, "ibv_query_") || has(msg, "ibv_poll_cq") || has(msg, "Unable to open device") ||
      has(msg, "Unable to query"))
    return make("ib_device_error", msg);
  // Posting to a queue pair that a failed completion has put in error.
  if (has(msg, "ibv_post_") && has(msg, "failed")) return make("nccl_system_error", msg);
  return std::nullopt;
}

// TCP between NCCL's processes: interfaces, connects, a peer that went away.
std::optional<ClassifiedMessage> classify_socket(sv msg) {
  // "Bootstrap : no socket interface found", "NET/Socket : No usable listening interface found",
  // "NET/IB : No IP interface found.", "No interface found in the same subnet as remote address";
  // NCCL_OOB_NET_IFNAME matching no device; a socket made for a family never found.
  if ((has_ci(msg, "interface found") && has_ci(msg, "no ")) ||
      has(msg, "NCCL_SOCKET_IFNAME interface found") || has(msg, "neither AF_INET") ||
      has(msg, "no device found matching") || has(msg, "no device found after excluding") ||
      (has(msg, "Socket creation failed") && has(msg, "Address family not supported")))
    return make("no_socket_interface", msg);
  // getaddrinfo of NCCL_COMM_ID's host: the bootstrap cannot find its root.
  if (has(msg, "getting address info")) return make("bootstrap_failed", msg);
  // A connect that failed is a connect failure whatever the reason it gives: "Net : Connect to
  // 172.17.0.2<40537> failed : Connection reset by peer", 2.21's "socketPollConnect: Connect to X
  // returned 104(Connection reset by peer)", 2.28's lower-case "connect to X failed".
  // socketStartConnect/socketPollConnect (2.18+, ncclOsSocketPollConnect in 2.30) fail only
  // while connecting ("exceeded retries (34)", "poll() returned 0, no POLLOUT events"); so do
  // the accepts of a listening socket.
  if ((has_ci(msg, "connect to ") && (has_ci(msg, "fail") || has(msg, "returned"))) ||
      msg.substr(0, 11) == "Connect to " ||  // include/socket.h's, even cut after its peer
      has(msg, "Call to connect") || has(msg, "StartConnect") || has(msg, "PollConnect") ||
      has(msg, "Accept failed") || has(msg, "TryAccept") || has(msg, "[Service thread] Accept"))
    return make("connect_failed", msg);
  // ECONNRESET's text, also as users retype it ("Connection reset  by peer").
  if (has(msg, "Connection reset")) return make("peer_reset", msg);
  // socketFinalizeAccept: "wrong magic 74656d2f20544547 != 7970663b906d70b9": a connection that
  // is not NCCL's (a port scanner, a metrics scraper's "GET /met...") reached NCCL's listening
  // port. NCCL prints no error trace, but versions before the fix (NVIDIA/nccl PR 1834) keep
  // polling that socket and the job hangs: booked as the warning it is (the detail marks it).
  if (has(msg, "wrong magic"))
    return make("nccl_warning", msg, "a connection that is not NCCL's reached its listening port");
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
  if (has(msg, "Connection refused") || has(msg, "Software caused connection abort") ||
      has(msg, "Connection timed out") || has(msg, "No route to host") ||
      has(msg, "Network is unreachable"))
    return make("connect_failed", msg);
  // 2.4-2.17 net_socket.cc after a failed send/recv of the socket transport.
  if (has(msg, "socket progress error")) return make("nccl_system_error", msg);
  return std::nullopt;
}

// NCCL's own consistency checks of the topology and the rings every rank computed ("ring 0 does
// not loop back to start (14 != 0)", "Rank 2 has no transport for recv peer 5"): NCCL returns
// ncclInternalError; the ranks saw different topologies (NCCL_HOSTID, mixed versions or settings).
std::optional<ClassifiedMessage> classify_internal(sv msg) {
  if (has(msg, "does not loop back to start") || has(msg, "does not contain rank"))
    return make("nccl_internal_error", msg, "ranks computed inconsistent rings");
  if (has(msg, "no transport for") || has(msg, "No transport found") ||
      // The ranks on one node disagree on who is local (NCCL_HOSTID, duplicate host names).
      has(msg, "Failed to determine") || has(msg, "not found in the list of system hostHashes") ||
      has(msg, "Internal error") || has(msg, "could not find CPU") ||
      has(msg, "Could not find any local path") || has(msg, "No path computed"))
    return make("nccl_internal_error", msg);
  return std::nullopt;
}

// The XML topology NCCL reads or builds (graph/xml.h, graph/xml.cc): "Attribute arch of node cpu
// not found" (xmlGetAttrStr), "XML Parse : Unexpected EOF", "XML Mismatch : cpu / pci", "Error :
// XML parser is limited to N nodes", "XML Topology has wrong version 1, 2 needed", "Could not open
// XML graph file F" (NCCL_GRAPH_FILE, 2.4-2.7).
std::optional<ClassifiedMessage> classify_topology(sv msg) {
  if ((has(msg, "Attribute ") && has(msg, " of node ") && has(msg, " not found")) ||
      has(msg, "XML Parse") || has(msg, "XML Mismatch") || has(msg, "XML parser is limited") ||
      has(msg, "too many XML nodes") || has(msg, "XML Topology has wrong version") ||
      has(msg, "Could not open XML"))
    return make("topology_error", msg);
  return std::nullopt;
}

// CUDA, NVML and the OS under NCCL.
std::optional<ClassifiedMessage> classify_host(sv msg) {
  // checks.h "Cuda failure 'x'" / "Cuda failure N 'x'"; cudawrap.cc ("Failed to create CUDA
  // context", "Failed to find CUDA library", "cuDriverGetVersion failed", "CUDA Driver version
  // found is N. Minimum requirement is M"); p2p.cc ("failed to open CUDA IPC handle", "failed to
  // peer with device", "cudaIpcGetMemHandle failed"); NVLS ("CUDA error 1 'invalid argument'").
  // NCCL 1.x's src/core.cu names the CUDA call's purpose and, sometimes, cudaGetErrorString's
  // text: "rank 1 failed to copy maps to device", "Faild to clear dev map: an illegal memory
  // access was encountered", "failed to open Ipc handle to rank 2", "failed to map zero copy
  // buffer to device" (all returned as ncclUnhandledCudaError).
  if (has(msg, "Cuda failure") || has_ci(msg, "unhandled cuda error") ||
      has(msg, "ncclUnhandledCudaError") || has(msg, "failed to peer with device") ||
      has(msg, "an illegal memory access was encountered") ||
      has(msg, "unspecified launch failure") ||
      (has(msg, "failed to ") &&
       (has(msg, "to device") || has(msg, "zero copy") || has(msg, "Ipc handle") ||
        has(msg, "register host buffer") || has(msg, "memset device buffer"))) ||
      ((has_ci(msg, "cuda") || has(msg, "cuDriver") || has(msg, "cuMem")) &&
       !has(msg, "NET/") &&  // a net plugin's CUDA trouble is the plugin failing to start
       (has_ci(msg, "fail") || has_ci(msg, "error") || has(msg, "Minimum requirement") ||
        has(msg, "older than the minimum version") || has(msg, "CUDA IPC handle"))))
    return make("cuda_error", msg);
  // NVML ("nvmlInit_v2() failed: Driver Not Loaded", "Failed to open libnvidia-ml.so.1"), sysfs
  // during topology detection, a topology file, the IMEX channels of MNNVL, threads.
  if (((has_ci(msg, "nvml") || has(msg, "libnvidia-ml")) &&
       (has_ci(msg, "fail") || has(msg, "Failed to open"))) ||
      has(msg, "Could not find real path") || (has(msg, "MNNVL") && has(msg, "not working")) ||
      has(msg, "Thread creation failed"))
    return make("nccl_system_error", msg);
  return std::nullopt;
}

// Net plugins failing to start, and NCCL's proxy threads.
std::optional<ClassifiedMessage> classify_plugin_proxy(sv msg) {
  // benign_plugin_line() has already let through the "not found, using internal" probing.
  // aws-ofi-nccl's "NET/OFI Could not find any optimal provider": no libfabric provider (EFA,
  // verbs) it can use, so the plugin does not start.
  if (((has(msg, "NET/Plugin") || has(msg, "NET/OFI")) &&
       (has_ci(msg, "fail") || has_ci(msg, "unable") || has_ci(msg, "error") ||
        has(msg, "returned") || has(msg, "undefined symbol") || has(msg, "Couldn't") ||
        has(msg, "Could not"))) ||
      has(msg, "Failed to initialize any NET plugin"))
    return make("plugin_init_failed", msg);
  // A proxy's Connect that failed with a system error (2) is the transport's connect failing;
  // with a remote error (6) it only saw the peer go (nccl_795: a Broken pipe before it).
  if ((has(msg, "operation=Connect") || has(msg, "operation Connect")) &&
      (has(msg, "res=2,") || has(msg, "retcode 2")))
    return make("connect_failed", msg);
  // proxy.cc: "[Proxy Service N] Failed to execute operation", "[Service thread] ...", "Proxy Call
  // to rank N failed", "ncclProxyCallBlockingUDS|ncclProxyClientGetFd ... failed : N".
  if (has(msg, "[Proxy Service") || has(msg, "[Service thread]") ||
      has(msg, "Socket recv failed while polling") || has(msg, "Proxy Call to rank") ||
      ((has(msg, "ncclProxyCall") || has(msg, "ncclProxyClient")) && has(msg, "failed")))
    return make("proxy_failed", msg);
  return std::nullopt;
}

// Rules for text that states an error by itself: NCCL WARN lines and `Last error:` lines.
std::optional<ClassifiedMessage> classify_error_text(sv msg) {
  // enqueue.cc before 2.13: "Error : no algorithm/protocol available", returned as
  // ncclInternalError (later versions say "No algorithm/protocol available for function ..." and
  // return ncclInvalidUsage, classify_usage).
  if (has(msg, "Error : no algorithm/protocol available")) return make("nccl_internal_error", msg);
  if (auto c = classify_resources(msg)) return c;
  if (auto c = classify_usage(msg)) return c;
  if (auto c = classify_verbs(msg)) return c;
  if (auto c = classify_socket(msg)) return c;
  if (auto c = classify_topology(msg)) return c;
  if (auto c = classify_internal(msg)) return c;
  if (auto c = classify_host(msg)) return c;
  if (auto c = classify_plugin_proxy(msg)) return c;
  // The last word: a system call that failed with its errno text (socket(), accept(), open()).
  for (sv errno_text :
       {sv("Too many open files"), sv("Resource temporarily unavailable"),
        sv("Interrupted system call"), sv("Bad file descriptor"), sv("Permission denied"),
        sv("Operation not permitted"), sv("Input/output error"), sv("No space left on device")})
    if (has(msg, errno_text)) return make("nccl_system_error", msg, std::string(errno_text));
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

bool last_connect_retry(sv msg) {
  const size_t at = msg.find("retrying (");
  if (at == sv::npos || !has_ci(msg.substr(0, at), "connect")) return false;
  size_t i = at + 10;
  long done = 0, of = 0;
  int digits = 0;
  while (i < msg.size() && is_digit(msg[i]) && digits < 6) done = done * 10 + (msg[i++] - '0'), ++digits;
  if (digits == 0 || i >= msg.size() || msg[i++] != '/') return false;
  digits = 0;
  while (i < msg.size() && is_digit(msg[i]) && digits < 6) of = of * 10 + (msg[i++] - '0'), ++digits;
  return digits > 0 && i < msg.size() && msg[i] == ')' && of > 0 && done >= of;
}

}  // namespace

std::optional<ClassifiedMessage> classify_socket_error(sv msg) { return classify_socket(msg); }

bool address_change_event(sv msg) {
  return has_ci(msg, "GID table change") || has_ci(msg, "LID change");
}

bool is_completion_kind(std::string_view kind) {
  return kind == "transport_retry_exceeded" || kind == "rnr_retry_exceeded" ||
         kind == "work_request_flushed" || kind == "local_protection_error" ||
         kind == "remote_access_error" || kind == "completion_error";
}

std::optional<ClassifiedMessage> classify_message(sv msg, LineSource source, bool last_error) {
  if (msg.empty()) return std::nullopt;
  // Most INFO lines state nothing wrong: only these words can (this runs on every line).
  if (source == LineSource::kNcclInfo && !last_error && !has(msg, "ibv_") && !has(msg, "NET/") &&
      !has(msg, "libibverbs") && !has(msg, "retrying ("))
    return std::nullopt;
  if (benign_plugin_line(msg)) return std::nullopt;
  if (source == LineSource::kNcclWarn || last_error) {
    if (benign_warning(msg)) return std::nullopt;
    if (auto c = classify_error_text(msg)) return c;
    if (auto c = classify_wrapper_text(msg)) return c;
    if (source == LineSource::kNcclWarn) return make("nccl_warning", msg);
    return std::nullopt;
  }
  if (source == LineSource::kNcclInfo) {
    // NCCL 2.19+ logs each connect retry at INFO ("socketPollConnect: connect returned No route to
    // host, retrying (34/34) after sleep for 3400 msec"); the last of them is the connect that
    // failed, even where the WARN after it was not pasted. Earlier retries may still succeed.
    if (last_connect_retry(msg)) return make("connect_failed", msg);
    // INFO lines that still state a failure (NCCL >= 2.19 logs a missing libibverbs at INFO;
    // plugin loaders and the IB transport report failed calls at INFO in some versions).
    const bool verbs_fail = has(msg, "ibv_") && has_ci(msg, "failed");
    const bool plugin_fail = (has(msg, "NET/Plugin") || has(msg, "NET/OFI")) &&
                             (has_ci(msg, "fail") || has(msg, "returned") || has_ci(msg, "unable"));
    if (verbs_fail || plugin_fail || (has(msg, "libibverbs") && has_ci(msg, "failed")))
      return classify_error_text(msg);
    return std::nullopt;
  }
  // A quote that kept only NCCL's message, without its prefix ("NET/IBP:Got completion from peer
  // ... with status=12"): NCCL's own words, read as a WARN would be.
  if (msg.substr(0, 4) == "NET/")
    if (auto c = classify_error_text(msg)) return c;
  // misc/shmutils.cc's text quoted without its prefix ("Error while creating shared memory
  // segment /dev/shm/nccl-CsYXMW (size 9637888)"): the segment's name is NCCL's.
  if (has(msg, "/dev/shm/nccl-") &&
      (has_ci(msg, "error") || has_ci(msg, "fail") || has(msg, "Could not") || has(msg, "Unable")))
    if (auto c = classify_resources(msg)) return c;
  return classify_wrapper_text(msg);
}

const char* kind_of_source_file(sv file) {
  // "graph/xml.cc:637", "misc/nvmlwrap.cc:70", "include/alloc.h:48": where NCCL's WARN call is.
  const auto in = [&](sv part) { return file.find(part) != sv::npos; };
  if (in("cudawrap")) return "cuda_error";
  if (in("nvmlwrap")) return "nccl_system_error";
  if (in("shmutils") || in("transport/shm.")) return "shm_exhausted";
  if (in("include/alloc.h")) return "out_of_memory";
  if (in("bootstrap.c")) return "bootstrap_failed";
  if (in("proxy.c")) return "proxy_failed";
  if (in("graph/")) return "nccl_internal_error";
  return nullptr;
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
