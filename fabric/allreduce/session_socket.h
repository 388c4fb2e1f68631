// Authenticated TCP connections between ranks, on the one socket layer (fabric/wire, fabric/tcp):
// the session handshake (wire/handshake.h, purpose "allreduce"; the token never crosses the wire)
// carries a small hello (rank, world, plan digest). Every call is bounded by an absolute deadline
// computed from the caller's timeout. Shared by the socket all-reduce, the raw exchange, the Gloo store and the NCCL
// rendezvous, so all of them reject a wrong token the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "common/unique_fd.h"

#include "fabric/wire/socket_io.h"

namespace fabkit::fabric {

using Fd = ::fabkit::UniqueFd;

struct HelloInfo {
  uint32_t rank = 0;
  uint32_t world = 0;
  uint64_t plan_digest = 0;  // both sides must run the same sizes/iterations/collective
};

// Listening socket on addr:port (SO_REUSEADDR). Throws PeerError io_error naming addr:port.
Fd listen_on(const std::string& addr, uint16_t port, const std::string& ifname);

// Accepts until a connection proves `token` and sends a hello with the same plan. Connections
// handshake concurrently (wire/handshake_gate.h: each cut off after 2 s, the oldest of 256
// pending closed to make room), so a silent or trickling client never delays the real peer; refused
// ones get a named error frame and are counted in the error if none succeeds before timeout_ms
// (PeerError accept_timeout, or token_rejected when something connected). A different plan ->
// PeerError plan_mismatch.
Fd accept_peer(int listen_fd, const std::string& token, const HelloInfo& mine, int timeout_ms,
               HelloInfo* peer);

struct AcceptedPeer {
  Fd fd;
  HelloInfo hello;
};
// The same for `count` peers on one listener (the Gloo store's rank 0), in the order their
// handshakes finish, all within the one timeout_ms.
std::vector<AcceptedPeer> accept_peers(int listen_fd, size_t count, const std::string& token,
                                       const HelloInfo& mine, int timeout_ms);

// Connects (retrying refused connections until timeout_ms: the listener may start later), runs
// the handshake with the hello, waits for the verdict. SO_BINDTODEVICE on ifname must hold. PeerError connect_failed / token_rejected /
// plan_mismatch / peer_timeout.
Fd connect_peer(const std::string& peer_addr, uint16_t port, const std::string& local_addr,
                const std::string& ifname, const std::string& token, const HelloInfo& mine,
                int timeout_ms, HelloInfo* peer);

// Throughput tuning for data connections: TCP_NODELAY (every message is a whole segment; Nagle
// would only add latency to the small sizes), and SO_SNDBUF/SO_RCVBUF when buffer_bytes > 0.
// Returns a note for the report ("" when all applied).
std::string tune_data_socket(int fd, int buffer_bytes);

// Blocking helpers; timeout_ms bounds the whole call (not each wait); `what` names the step.
void send_all(int fd, const void* data, size_t len, int timeout_ms, const std::string& what);
void recv_all(int fd, void* data, size_t len, int timeout_ms, const std::string& what);

// One frame of the one framing (wire/frame.h) by an absolute deadline, errors as PeerError like
// send_all/recv_all (peer_timeout, peer_closed; io_error for a frame over max_payload_bytes, named
// before any payload byte is read, or an unknown type).
void send_frame(int fd, const wire::Frame& frame, wire::Deadline deadline, const std::string& what);
wire::Frame recv_frame(int fd, uint32_t max_payload_bytes, wire::Deadline deadline, const std::string& what);

void set_nonblocking(int fd);
uint64_t fnv1a64(const std::string& s);

}  // namespace fabkit::fabric
