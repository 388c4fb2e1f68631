// PyTorch's texts around NCCL: ProcessGroupNCCL's watchdog and its exceptions (NCCLUtils'
// "NCCL error in: ..., <ncclGetErrorString text>, NCCL version X" and "ncclXError: ..." details),
// c10d's own rendezvous (TCPStore.cpp, socket.cpp: DistStoreError, DistNetworkError; Utils.hpp's
// recvBytes/sendBytes), Gloo's TCP pairs, and nccl-tests' failures. These either wrap an error
// told on another line (the failure tiers in nccl_failure_kinds.h rank them below it) or report
// the store that every NCCL communicator's unique id goes through.
#include "fabric/nccl_log/nccl_log_classify.h"
#include "fabric/nccl_log/nccl_log_match.h"

namespace fabkit::nccl_log {
namespace {

using namespace match;

// c10d's rendezvous and Gloo: the exception class or the component tag says whose text it is.
std::optional<ClassifiedMessage> classify_c10d_text(sv msg) {
  const bool gloo = has(msg, "gloo") || has(msg, "Gloo");
  const bool store = has(msg, "DistStoreError") || has(msg, "DistNetworkError") ||
                     has(msg, "[c10d]") || has(msg, "TCPStore") || has(msg, "Stop_waiting");
  if (!gloo && !store) return std::nullopt;
  // socket.cpp tries every address of MASTER_ADDR and warns for each one that fails ("The client
  // socket has failed to connect to [node1]:29500 (errno: 111 ...)", "cannot be initialized to
  // connect to [localhost]:29500 (errno: 97 ...)") while it retries: only its final error counts.
  if (has(msg, "cannot be initialized to connect") ||
      (has(msg, "has failed to connect to [") && !has(msg, "any network address")))
    return std::nullopt;
  if (has(msg, "got 0 bytes") || has(msg, "Connection was likely closed") ||
      has(msg, "Connection closed by peer"))
    return make("peer_closed", msg);
  if (has(msg, "Connection reset by peer")) return make("peer_reset", msg);
  if (has(msg, "Broken pipe")) return make("broken_pipe", msg);
  if (gloo) {
    if (has(msg, "connectFullMesh") || has(msg, "Connection refused"))
      return make("connect_failed", msg);
    // unbound_buffer.cc: "Timed out waiting 1800000ms for recv operation to complete".
    if (has(msg, "Timed out waiting"))
      return make("watchdog_timeout", msg, "Gloo operation timed out");
    return std::nullopt;
  }
  // The store is where every rank meets rank 0 (MASTER_ADDR:MASTER_PORT) and fetches NCCL's
  // unique id: a store that cannot be reached, bound or waited on is a bootstrap failure.
  if (has(msg, "DistStoreError") || has(msg, "client socket has timed out") ||
      has(msg, "any network address") || has(msg, "server socket has failed") ||
      has(msg, "waiting for clients") || has(msg, "wait timeout") || has(msg, "Socket Timeout") ||
      has(msg, "Stop_waiting"))
    return make("bootstrap_failed", msg);
  return std::nullopt;
}

// ncclGetErrorString's text quoted by an application's own check of an NCCL 1.x or 2.x call:
// NVIDIA Caffe's "NCCL Init failed (10) 'cuda malloc failed'" and "NCCL failure file.cu:N 'x'"
// (its NCCLCHECK), and the same macro in many applications. NCCL 1.x numbered its codes
// differently from 2.x, so the text names the kind, not the number.
std::optional<ClassifiedMessage> classify_nccl_result_text(sv msg) {
  size_t at = msg.find("NCCL Init failed (");
  if (at == sv::npos) at = msg.find("NCCL failure ");
  if (at == sv::npos) return std::nullopt;
  const size_t open = msg.find('\'', at);
  const size_t close = open == sv::npos ? sv::npos : msg.find('\'', open + 1);
  if (close == sv::npos) return std::nullopt;
  const sv text = msg.substr(open + 1, close - open - 1);
  const auto is = [&](sv s) { return text.substr(0, s.size()) == s; };
  if (is("cuda malloc failed")) return make("out_of_memory", msg, std::string(text));
  if (is("unhandled cuda error") || is("device not found")) return make("cuda_error", msg);
  if (is("system error") || is("unhandled system error") || is("lib wrapper not initialized"))
    return make("nccl_system_error", msg);
  if (is("internal error")) return make("nccl_internal_error", msg);
  if (is("remote process exited")) return make("nccl_remote_error", msg);
  if (is("invalid") || is("unsupported device count") || is("parameter mismatch"))
    return make("nccl_invalid_usage", msg, std::string(text));
  return std::nullopt;
}

}  // namespace

std::optional<ClassifiedMessage> classify_wrapper_text(sv msg) {
  // ProcessGroupNCCL's watchdog: a collective past its timeout ("Watchdog caught collective
  // operation timeout: WorkNCCL(...)", "Timeout at NCCL work: 77"), or the watchdog itself stuck
  // ("Heartbeat monitor timed out!", "watchdog got stuck"). Its "Exception (either an error or
  // timeout) detected by watchdog at work: N" follows either and names neither.
  if (has(msg, "Watchdog caught collective operation timeout") || has(msg, "watchdog got stuck") ||
      has(msg, "Heartbeat monitor timed out") || has(msg, "Timeout at NCCL work") ||
      // Another rank's watchdog timed out and asked this one to dump its state.
      has(msg, "dump signal due to a collective timeout") ||
      // torch 2.8+: "failure detected by watchdog at work sequence id: N" covers a timeout and
      // an async error alike; alone in a log (no error line names another cause) it is the
      // watchdog's report, ranked below any error that does.
      has(msg, "failure detected by watchdog") ||
      // Only the watchdog thread's C++ frames pasted: WorkNCCL::checkTimeout throws for a
      // collective past its timeout and for nothing else.
      has(msg, "WorkNCCL::checkTimeout")) {
    const size_t w = msg.find("WorkNCCL(");
    // "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, ..., Timeout(ms)=600000)": the ')' of "(ms)" is not
    // the end.
    const size_t t = w == sv::npos ? sv::npos : msg.find("Timeout(ms)", w);
    const size_t e = w == sv::npos ? sv::npos : msg.find(')', t == sv::npos ? w : t + 11);
    return make("watchdog_timeout", msg,
                e == sv::npos ? std::string() : std::string(msg.substr(w, e + 1 - w)));
  }
  // ProcessGroupNCCL's "Some NCCL operations have failed or timed out. Due to the asynchronous
  // nature of CUDA kernels, ..." is printed when the watchdog takes the process down, after a
  // timeout or an async NCCL error alike; alone it is a collective that did not complete (the
  // timeout is the common case, and an error would have its own line). The detail marks it: the
  // parser books it only when no other line names an error (nccl_log_parse.cc).
  if (has(msg, "Some NCCL operations have failed or timed out"))
    return make("watchdog_timeout", msg, kWatchdogTakedownDetail);
  if (auto c = classify_nccl_result_text(msg)) return c;
  if (has(msg, "store->get(") || (has(msg, "ncclUniqueId") && has_ci(msg, "timeout")) ||
      has(msg, "NCCL timeout in communicator initialization"))
    return make("bootstrap_failed", msg);
  // NCCL's return codes, by name (NCCLUtils' "ncclRemoteError: ...") or by ncclGetErrorString's
  // text ("remote process exited or there was a network error", "unhandled system error").
  if (has(msg, "ncclRemoteError") || has(msg, "remote process exited or there was a network error"))
    return make("nccl_remote_error", msg);
  // ncclGetErrorString's words, not its spelling: users retype them ("unhanled system error").
  if (has(msg, "ncclSystemError") || has(msg, "unhandled system error") ||
      (has(msg, "NCCL error") && has(msg, " system error")))
    return make("nccl_system_error", msg);
  // nccl-tests' "Test CUDA failure common.cu:891 'out of memory'", PyTorch's "CUDA error: out of
  // memory": the allocation, not CUDA, failed.
  if (has(msg, "out of memory") && (has(msg, "Test CUDA failure") || has(msg, "CUDA error")))
    return make("out_of_memory", msg);
  if (has(msg, "Test timeout (")) return make("watchdog_timeout", msg, "nccl-tests timeout");
  if (has(msg, "ncclUnhandledCudaError") || has_ci(msg, "unhandled cuda error") ||
      has(msg, "Test CUDA failure") ||  // nccl-tests' own CUDA call failed
      // nccl-tests before "Test" was added (2017-2018): "Cuda failure common.cu:891 'x'".
      has(msg, "Cuda failure common.cu") ||
      // "[Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory
      // access was encountered": the watchdog met a CUDA error, not a timeout.
      has(msg, "CUDA error: "))
    return make("cuda_error", msg);
  if (has(msg, "ncclInvalidUsage") || has(msg, "ncclInvalidArgument") ||
      (has(msg, "NCCL error") && (has(msg, "invalid usage") || has(msg, "invalid argument"))))
    return make("nccl_invalid_usage", msg);
  if (has(msg, "ncclInternalError") || (has(msg, "NCCL error") && has(msg, "internal error")) ||
      (has(msg, "Test NCCL failure") && has(msg, "internal error")))
    return make("nccl_internal_error", msg);
  return classify_c10d_text(msg);
}

}  // namespace fabkit::nccl_log
