// The ONE communication interface of fabtrain. Everything above it (parallel/, optim/,
// checkpoint/, app/) talks to ranks only through this class; all c10d use sits in the comm_*.cc
// files of trainer/distributed: a backend each (comm_gloo.cc for CPU ranks, comm_nccl.cc for GPU
// ranks), what the two share (comm_c10d.cc: requests, the dead-group rule), the rendezvous store
// (comm_store.cc) and sub-groups (comm_group.cc).
//
// Buffers are raw fp32/fp64 pointers (and bf16 bits as uint16_t), not tensors, so this header
// pulls in no torch headers (torch TUs compile slowly) and optim/ and checkpoint/ stay plain C++.
//
// Where buffers live: Gloo and the local comm take host memory. The NCCL comm takes memory of its
// own GPU (the sharded model's parameters and gradients) AND host memory (the loop's few scalars,
// checkpoint hashes), which it stages through the device: it asks CUDA which kind a pointer is on
// every call, so a caller cannot hand it the wrong kind. For device buffers, "in place after
// wait()" means in stream order: work queued on the caller's current CUDA stream after wait()
// sees the result (as with torch.distributed); host buffers are complete when wait() returns.
//
// Why so few operations: each backend implements exactly what the trainer needs, as cheaply as it
// can. The Gloo backend builds allgather and reduce-scatter from direct point-to-point exchanges
// (comm_gloo.cc) that send from and receive into the caller's memory; reduce-scatter moves
// (N-1)/N of the buffer per rank.
//
// A collective that does not complete within CommOptions::collective_timeout_ms throws CommError
// on every rank that waits for it, naming the ranks (and hosts) that did not arrive.
//
// The *_async calls return at once with the collective in flight, so the caller can compute
// while it runs (prefetching the next layer's parameters, reducing one layer's gradients during
// the next layer's backward). Every rank must issue the same collectives in the same order;
// buffers stay untouched by the caller until wait() returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace fabkit::trainer {

// A collective or the rendezvous failed. The group is dead after this: no further collective
// may be issued (a peer may sit in a different one). The message names the operation, the rank
// and the likely cause.
class CommError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Called with the error of a group that has just failed for good (a collective failed or passed
// its deadline, a pause barrier timed out), before it is thrown. Unwinding from there runs the
// group's destructor, and a dead group's can block: ~ProcessGroupNCCL joins its heartbeat thread,
// which may sit in a store check that has no receive timeout when the store's host is the rank
// that stopped, and its abort waits up to the backend timeout for ncclCommAbort. A program that
// ends on such an error (fabtrain) sets a handler that reports it and leaves at once, so the
// error is always said; a handler that returns lets the error be thrown. Empty (the default):
// thrown as usual. Process-wide; set it before the first group is made.
using DeadGroupHandler = std::function<void(const CommError&)>;
void set_dead_group_handler(DeadGroupHandler handler);

// A collective in flight. wait() returns once its output is in place, or throws CommError. A
// request that is never waited for is waited for by its destructor (errors then only logged by
// the backend), so buffers are never written after the caller freed them.
class CommRequest {
 public:
  virtual ~CommRequest() = default;
  virtual void wait() = 0;
};
using CommRequestPtr = std::unique_ptr<CommRequest>;

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string backend() const = 0;    // "gloo", "nccl", "local"
  virtual std::string transport() const = 0;  // "tcp via eth0 (10.0.0.5)", "none"

  virtual void allreduce_sum(float* data, size_t count) = 0;
  virtual void allreduce_sum(double* data, size_t count) = 0;
  // out holds world_size() * count floats; rank r's input lands at out + r * count.
  virtual void allgather(const float* in, size_t count, float* out) = 0;
  virtual CommRequestPtr allgather_async(const float* in, size_t count, float* out) = 0;
  // in holds world_size() * count floats; chunk r (in + r * count) is this rank's contribution to
  // rank r. ADDS the sum over ranks of their chunk rank() into out (count floats): gradients
  // accumulate into a shard without a separate pass.
  virtual CommRequestPtr reduce_scatter_add_async(const float* in, size_t count, float* out) = 0;
  void reduce_scatter_add(const float* in, size_t count, float* out) {
    reduce_scatter_add_async(in, count, out)->wait();
  }
  virtual void broadcast(float* data, size_t count, int root) = 0;
  // Raw bytes, bit for bit: integers (a step count past 2^24 is no float), hashes, flags.
  virtual void broadcast_bytes(void* data, size_t bytes, int root) = 0;
  // out holds world_size() * bytes; rank r's bytes land at out + r * bytes.
  virtual void allgather_bytes(const void* in, size_t bytes, void* out) = 0;
  virtual void barrier() = 0;
  // A barrier after a pause of some ranks only (rank 0 writing a checkpoint's manifest while the
  // others wait): over the rendezvous store, with CommOptions::pause_timeout_ms, so neither the
  // collective timeout nor ProcessGroupNCCL's watchdog counts the pause. `what` names the pause
  // in the error. Host order only: no device work is ordered by it.
  virtual void pause_barrier(const std::string& what) { barrier(); }
  // Point-to-point: a pipeline's activations and their gradients between neighbouring stages
  // (parallel/pipeline_runner.h). Tag separates concurrent streams under Gloo; tags from 2^30 up
  // are the backend's own (its allgather and reduce-scatter exchanges). NCCL ignores the tag and
  // matches a pair's sends and receives in the order they are posted.
  virtual void send(const float* data, size_t count, int dst_rank, int tag) = 0;
  virtual void recv(float* data, size_t count, int src_rank, int tag) = 0;
  // The send, returning once it is under way (Megatron's isend): wait() returns when it completed,
  // and the caller keeps `data` alive until then. The pipeline posts its sends this way, so a
  // rank computes on while its neighbour has not yet reached the receive. Default: the blocking
  // send (a backend whose send does not block the host already behaves so).
  virtual CommRequestPtr send_async(const float* data, size_t count, int dst_rank, int tag) {
    send(data, count, dst_rank, tag);
    return std::make_unique<CompletedRequest>();
  }

  // ---- 16-bit gradient reduction (--reduce-dtype bf16, FSDP's MixedPrecision(reduce_dtype)) ----
  // reduce_scatter_add_async with bf16 chunks on the wire: `in` holds world_size() * count bf16
  // values (their raw bits: this header stays free of torch), chunk r for rank r as above; the
  // sum over ranks of their chunk rank() is ADDED into the fp32 `out` (count floats), so the
  // shard stays the fp32 master gradient. Half the bytes of the fp32 call on every link.
  // Where the sum is formed differs by backend, and with it the rounding (docs/fabtrain.md
  // "Precision"): NCCL sums in bf16 on the way (as FSDP does), then widens the result into out;
  // Gloo (comm_gloo.cc) and the local comm widen each chunk and sum in fp32.
  // A separate call rather than a dtype argument of the fp32 one: bf16 is the one 16-bit type a
  // sum of gradients can travel in without loss scaling of the wire (fp16 would overflow where an
  // fp32 or bf16 sum does not), so there is nothing else to select; and the fp32 call, which
  // every backend and test double implements, stays as it is.
  // Not pure: test doubles that never reduce (tests/unit/trainer_control) need not implement it;
  // every real backend does.
  virtual CommRequestPtr reduce_scatter_add_bf16_async(const uint16_t* /*in*/, size_t /*count*/,
                                                       float* /*out*/) {
    throw CommError("the " + backend() + " comm has no bf16 reduce-scatter (--reduce-dtype bf16)");
  }
  void reduce_scatter_add_bf16(const uint16_t* in, size_t count, float* out) {
    reduce_scatter_add_bf16_async(in, count, out)->wait();
  }

  // A sum the host reads later: the training step's loss, gradient norm and control votes, read
  // one step on (or on a log step) so the host never waits for the GPU's queue in between
  // (trainer/app/train_loop.cc). In place on return exactly as allreduce_sum (device buffers: in
  // stream order, for the clip that follows on the device). The returned request's wait() is a
  // host wait, with the collective deadline (the missing ranks named), until the sum has landed in
  // the buffer: after it the host may copy the buffer out without waiting for device work queued
  // later. Host memory and host backends: complete on return, as allreduce_sum.
  virtual CommRequestPtr allreduce_sum_landed(double* data, size_t count) {
    allreduce_sum(data, count);
    return std::make_unique<CompletedRequest>();
  }

 protected:
  class CompletedRequest : public CommRequest {
   public:
    void wait() override {}
  };
};

struct CommOptions {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  uint16_t master_port = 29500;
  // torchrun's agent (TORCHELASTIC_USE_AGENT_STORE=True) already hosts a TCPStore at
  // master_addr:master_port; every rank then connects as a client.
  bool store_hosted_by_agent = false;
  std::string socket_ifname;  // GLOO_SOCKET_IFNAME from the profile; empty: this host's name
  int rendezvous_timeout_ms = 60000;
  // fabtrain's deadline for one collective: past it every waiting rank names the ranks that did
  // not arrive (CommError) before the backend's own timeout, which is set longer.
  int collective_timeout_ms = 60000;
  // pause_barrier()'s deadline (never below the collective timeout).
  int pause_timeout_ms = 30 * 60 * 1000;
  std::string store_prefix = "fabtrain";
  // >= 0: this rank trains on CUDA device cuda_device (an index among the visible devices) and
  // talks NCCL; -1: CPU and Gloo.
  int cuda_device = -1;
};

// The store namespace of this run's attempt. torchrun's agent (store_hosted_by_agent) keeps its
// store server across restarts of the workers, on the same port, and torch 2.5+ adds no
// per-attempt prefix for the workers (torch/distributed/rendezvous.py; TORCHELASTIC_RESTART_COUNT
// differs between agents, pytorch#135712), so keys a failed attempt wrote -- Gloo's peer
// addresses, NCCL's unique id -- are still there for the next attempt to read. Returns
// "<store_prefix>/attempt-<g>", g drawn once per attempt from a store counter by rank 0; every
// other rank learns g under a key named by a random number of its own, so no rank can read a
// number an earlier attempt left. Rank 0 waits for every rank (rendezvous timeout, naming those
// missing). Without an agent's store: store_prefix (rank 0 serves a fresh store per attempt).
std::string join_store_attempt(const CommOptions& options);

// world_size 1 without a store or sockets.
std::unique_ptr<Comm> make_local_comm();
// CPU: c10d::ProcessGroupGloo over a c10d::TCPStore. Throws CommError on rendezvous failure.
std::unique_ptr<Comm> make_gloo_comm(const CommOptions& options);
// GPU: c10d::ProcessGroupNCCL (world sizes 1 and up) on options.cuda_device, over the same store.
// Throws CommError when this build's LibTorch has no CUDA/NCCL or the rendezvous fails.
std::unique_ptr<Comm> make_nccl_comm(const CommOptions& options);
// cuda_device >= 0 -> NCCL; else world_size 1 -> local, else Gloo.
std::unique_ptr<Comm> make_comm(const CommOptions& options);
// A second communicator over some of the world's ranks (a pipeline stage's data-parallel
// replicas), with the world's backend: its own process group, keyed under
// "<world prefix>/<name>" in the world's rendezvous store. The world's rank 0 serves that store
// for as long as the world comm lives, so every member connects to it as a client. `ranks` lists
// the members in group order and must hold world.rank; every member calls this at the same point
// (other ranks need not). Same timeouts as the world.
std::unique_ptr<Comm> make_group_comm(const CommOptions& world, const std::vector<int>& ranks,
                                      const std::string& name);

}  // namespace fabkit::trainer
