// Bounded, checked NCCL and CUDA calls for the fabcheck-nccl-runner child (links NCCL and cudart).
//
// The communicator is non-blocking (config.blocking = 0) so that no call can hang the child: a
// call may return ncclInProgress, and then NO other call may touch the communicator until
// ncclCommGetAsyncError has left ncclInProgress. NCCL otherwise fails the next call with
// "invalid argument" and logs "Attempt to use communicator before the previous operation returned
// ncclSuccess" — what the GPU machine's first `fabcheck pair` run hit in its warm-up (NCCL 2.28
// connects lazily, inside the first collective). Every wait here has an absolute deadline; an
// error or an expired deadline aborts the communicator (ncclCommAbort) and throws a Failure
// naming the call, NCCL's error string and ncclGetLastError's text.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <string>

namespace fabkit::fabric::nccl_child {

using Clock = std::chrono::steady_clock;

struct Failure {
  std::string kind;  // "nccl_error", "cuda_error", "peer_timeout" (the child protocol's FAILED kinds)
  std::string text;
};

// Throws Failure{"cuda_error", "<call>: <cudaGetErrorName>: <cudaGetErrorString>"}.
void cuda_check(cudaError_t e, const std::string& call);

// "ncclInvalidUsage: invalid usage (run with NCCL_DEBUG=WARN for details) [NCCL: <last error>]"
std::string nccl_error_text(ncclComm_t comm, ncclResult_t r);

// A non-blocking communicator that is aborted unless it was finalized cleanly.
class Comm {
 public:
  Comm() = default;
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  // ncclCommInitRankConfig with blocking = 0, waited out until ready.
  void init(int world, const ncclUniqueId& id, int rank, Clock::time_point deadline);
  // Checks what an NCCL call on this communicator returned: ncclSuccess passes, ncclInProgress is
  // polled out (ncclCommGetAsyncError) before returning, anything else aborts and throws.
  void settle(ncclResult_t r, const std::string& what, Clock::time_point deadline);
  // Waits for `done` (recorded after the collective) while watching for an async NCCL error.
  void wait_event(cudaEvent_t done, const std::string& what, Clock::time_point deadline);
  // ncclCommFinalize (waited out) then ncclCommDestroy: the clean end.
  void finalize(Clock::time_point deadline);
  ncclComm_t get() const { return comm_; }

 private:
  [[noreturn]] void abort_and_throw(const std::string& kind, const std::string& text);
  ncclComm_t comm_ = nullptr;
};

inline Clock::time_point deadline_in(int timeout_ms) {
  return Clock::now() + std::chrono::milliseconds(timeout_ms);
}

}  // namespace fabkit::fabric::nccl_child
