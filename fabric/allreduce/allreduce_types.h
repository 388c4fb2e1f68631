// The all-reduce runners' shared vocabulary (docs/allreduce.md) and
// the nccl-tests arithmetic every runner reports with, so figures from the socket, Gloo and NCCL
// runners compare one to one.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/json.h"

namespace fabkit::fabric {

struct AllreduceSpec {
  int rank = 0;
  int world_size = 2;
  std::string local_addr;  // this rank binds here (the chosen interface's address)
  std::string peer_addr;   // rank 0's address as seen by rank 1 (and rank 1's as seen by rank 0)
  uint16_t port = 29400;   // rank 0 listens on local_addr:port
  std::string token;       // session token: proven by the handshake on every connection, never sent
  std::vector<uint64_t> sizes_bytes;  // empty = default_sizes_bytes()
  int iters = 20;
  int warmup_iters = 5;
  int timeout_ms = 10000;  // bound on connect, accept, and each collective call (one deadline each)
  std::string ifname;      // the chosen interface: SO_BINDTODEVICE when permitted, NCCL env
  // Added for rings of more than 2 ranks: rank i's address; every rank listens on ring_addrs[rank]
  // at `port` and connects to its right neighbour. Unused when world_size == 2.
  std::vector<std::string> ring_addrs;
  // 0 = leave the kernel's TCP autotuning alone; otherwise SO_SNDBUF/SO_RCVBUF (FORCE as root).
  int socket_buffer_bytes = 0;
  // Called after each size of the sweep (sizes done, sizes in the sweep), in the thread that runs
  // the runner (the NCCL runner: on each of its child's PROGRESS lines): the agent passes it on to
  // the controller's progress line. Empty: not called.
  std::function<void(size_t done, size_t total)> on_size_done;
};

struct SizeResult {
  uint64_t bytes = 0;
  double time_us = 0;     // mean time of one all-reduce over the timed iterations
  double algbw_gbps = 0;  // GB/s = 1e9 bytes/s (nccl-tests convention)
  double busbw_gbps = 0;
  bool correct = false;
  // The fastest timed iteration. Noise on a shared machine (a preempted rank) only ever slows a
  // call, so a search for a link that is slow every time reads this rather than the mean
  // (slurm/search_runner.cc); reports keep the mean, as nccl-tests does.
  double best_time_us = 0;
};

struct TransportRun {
  std::string transport;  // "fabkit-socket", "raw-exchange", "gloo-tcp", "gloo-ibverbs", "nccl-..."
  std::string status;     // ok | unavailable | failed
  std::string reason;
  std::vector<SizeResult> sizes;
  Json extra = Json::object();
};

Json to_json(const SizeResult&);
Json to_json(const TransportRun&);

// nccl-tests style: 8 B, x4 per step, up to and including 256 MiB (14 sizes).
std::vector<uint64_t> default_sizes_bytes();

// nccl-tests: algbw = bytes / time; all-reduce busbw = algbw * 2(n-1)/n.
double algbw_gbps(uint64_t bytes, double time_us);
double allreduce_busbw_gbps(double algbw_gbps, int world_size);

// Bad specs (rank out of range, empty token, size below one float...) -> UsageError naming the
// field, the value and the fix.
void validate_spec(const AllreduceSpec&);

// The named ways a run between ranks goes wrong; `kind` lands in TransportRun.extra.error so the
// controller (and tests) can tell a dead peer from a wrong token without parsing prose.
class PeerError : public std::runtime_error {
 public:
  PeerError(std::string kind, const std::string& message)
      : std::runtime_error(kind + ": " + message), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};
// Kinds: connect_failed, accept_timeout, token_rejected, plan_mismatch, peer_closed, peer_timeout,
// io_error, unavailable.

}  // namespace fabkit::fabric
