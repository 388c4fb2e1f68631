// A single-threaded, non-blocking send/receive engine: the engine under the fabkit socket
// all-reduce and the raw exchange (same sockets, same tuning, so their ratio measures only the
// reduction's cost).
//
// Why one thread per rank and not a send thread + a receive thread: on 2 cores the two ranks of a
// netns pair already fill both cores with their own work plus the kernel's TCP copies; extra
// threads only add context switches and cache-line ping-pong on the progress counters. The kernel
// socket buffers provide the overlap: while we reduce a chunk, the peer's data keeps landing in
// our receive buffer and our queued bytes keep leaving.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fabkit::fabric {

struct SendOp {
  const char* src = nullptr;
  size_t len = 0;
  int dep = -1;  // recv op whose processed bytes gate this send (byte for byte); -1 = none
};

struct RecvOp {
  char* dst = nullptr;
  size_t len = 0;
  // nullptr: receive straight into dst. Otherwise receive into the small bounce buffer and write
  // dst = addend + bounce right after each recv (float32), so the peer's data is read from cache.
  const float* addend = nullptr;
};

struct SendRecvConfig {
  int send_fd = -1;
  int recv_fd = -1;              // may equal send_fd (2 ranks: one full-duplex connection)
  size_t chunk_bytes = 1 << 20;  // bounce buffer size = the most one recv() takes for a reduce op
  int timeout_ms = 10000;        // one absolute deadline for the whole run_send_recv call
  std::string context;           // "size 67108864 B iteration 3": lands in error messages
};

// Runs all ops to completion by cfg.timeout_ms after the call starts; throws PeerError
// (peer_closed, peer_timeout, io_error).
// `bounce` must hold chunk_bytes and be float aligned. Sizes of reduce ops: multiples of 4.
// Reduce ops may receive any byte split (TCP keeps no element boundaries); a split float waits
// at the front of the bounce buffer for its remaining bytes.
void run_send_recv(const SendRecvConfig& cfg, const std::vector<SendOp>& sends,
                   const std::vector<RecvOp>& recvs, char* bounce);

// dst[i] = a[i] + b[i]; separate so the compiler vectorises it with no aliasing doubts.
void add_floats(float* __restrict dst, const float* __restrict a, const float* __restrict b,
                size_t n);

}  // namespace fabkit::fabric
