#include "fabric/nccl_runner/nccl_calls.h"

#include <thread>

namespace fabkit::fabric::nccl_child {
namespace {

// Short enough not to stretch a small all-reduce, long enough not to spin a core for seconds.
constexpr auto kPoll = std::chrono::microseconds(20);

std::string timeout_text(const std::string& what) {
  return what + " did not complete before its deadline (peer gone, network stalled, or the GPU "
                "is busy with another process); the communicator was aborted";
}

}  // namespace

void cuda_check(cudaError_t e, const std::string& call) {
  if (e != cudaSuccess)
    throw Failure{"cuda_error", call + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)};
}

std::string nccl_error_text(ncclComm_t comm, ncclResult_t r) {
  std::string s = ncclGetErrorString(r);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') s += " [NCCL: " + std::string(last) + "]";
  return s;
}

Comm::~Comm() {
  // Only reached with a live communicator on an error path: abort, never a blocking destroy.
  if (comm_ != nullptr) ncclCommAbort(comm_);
}

void Comm::abort_and_throw(const std::string& kind, const std::string& text) {
  if (comm_ != nullptr) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  throw Failure{kind, text};
}

void Comm::init(int world, const ncclUniqueId& id, int rank, Clock::time_point deadline) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&comm_, world, id, rank, &config);
  // On a hard failure comm_ may still be a handle NCCL allocated: abort it too.
  settle(r, "ncclCommInitRankConfig", deadline);
}

void Comm::settle(ncclResult_t r, const std::string& what, Clock::time_point deadline) {
  while (r == ncclInProgress) {
    if (Clock::now() > deadline) abort_and_throw("peer_timeout", timeout_text(what));
    std::this_thread::sleep_for(kPoll);
    ncclResult_t q = ncclCommGetAsyncError(comm_, &r);
    if (q != ncclSuccess)
      abort_and_throw("nccl_error", what + ": ncclCommGetAsyncError: " + nccl_error_text(comm_, q));
  }
  if (r != ncclSuccess) abort_and_throw("nccl_error", what + ": " + nccl_error_text(comm_, r));
}

void Comm::wait_event(cudaEvent_t done, const std::string& what, Clock::time_point deadline) {
  for (;;) {
    ncclResult_t async = ncclSuccess;
    ncclResult_t q = ncclCommGetAsyncError(comm_, &async);
    if (q != ncclSuccess)
      abort_and_throw("nccl_error", what + ": ncclCommGetAsyncError: " + nccl_error_text(comm_, q));
    if (async != ncclSuccess && async != ncclInProgress)
      abort_and_throw("nccl_error", what + ": " + nccl_error_text(comm_, async));
    cudaError_t e = cudaEventQuery(done);
    if (e == cudaSuccess && async == ncclSuccess) return;
    if (e != cudaSuccess && e != cudaErrorNotReady)
      abort_and_throw("cuda_error", what + ": cudaEventQuery: " + cudaGetErrorName(e) + ": " +
                                        cudaGetErrorString(e));
    if (Clock::now() > deadline) abort_and_throw("peer_timeout", timeout_text(what));
    std::this_thread::sleep_for(kPoll);
  }
}

void Comm::finalize(Clock::time_point deadline) {
  settle(ncclCommFinalize(comm_), "ncclCommFinalize", deadline);
  ncclResult_t r = ncclCommDestroy(comm_);
  comm_ = nullptr;  // destroyed (or unusable): nothing left to abort
  if (r != ncclSuccess) throw Failure{"nccl_error", "ncclCommDestroy: " + std::string(ncclGetErrorString(r))};
}

}  // namespace fabkit::fabric::nccl_child
