// TCP reachability and performance between two agents over one candidate interface pair, in the
// manner of a small iperf: the server side (TcpTestServer) runs on one agent bound to its
// candidate address; the client side (measure_link) runs on the other, bound to its own candidate
// address. Every data connection starts with the session handshake (wire/handshake.h, purpose
// "tcp_ping" or "tcp_sink"); the server refuses anything else. Figures carry their units in their
// names.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/json.h"
#include "common/latency_histogram.h"
#include "fabric/tcp/tcp_socket.h"
#include "fabric/wire/handshake_gate.h"

namespace fabkit::tcp {

inline constexpr size_t kPingBytes = 64;  // small message: latency, not bandwidth

struct PingStats {
  int count = 0;
  double median_us = 0, p99_us = 0, min_us = 0, max_us = 0;
  LatencyHistogram histogram;  // every sample, for the report's latency histograms
};
// Nearest-rank percentiles and the histogram of round-trip samples (pure; empty -> count 0).
PingStats ping_stats(std::vector<double> samples_us);

struct LinkTestSpec {
  std::string peer_addr;   // the server agent's candidate address
  uint16_t port = 0;       // its test server port
  std::string local_addr;  // our candidate address (bind before connect)
  std::string local_ifname;  // its interface (SO_BINDTODEVICE); "" = address bind only
  std::string token;
  int pings = 1000;
  int streams = 4;         // the "several streams" test; 1-stream always runs too
  int duration_ms = 1000;  // per bandwidth test
  uint64_t max_bytes = 4ull << 30;  // per bandwidth test: bounds time on very fast links
  int connect_timeout_ms = 2000;
};

struct LinkMeasurement {
  ConnectStatus status = ConnectStatus::kError;
  std::string error;  // empty when every step worked
  double connect_time_us = 0;
  bool bound_to_device = false;
  PingStats rtt;
  double single_stream_gbit_s = 0;
  double multi_stream_gbit_s = 0;
  int streams = 0;
  uint64_t single_stream_bytes = 0, multi_stream_bytes = 0;
};
Json to_json(const LinkMeasurement& m);

LinkMeasurement measure_link(const LinkTestSpec& spec);

// Serves ping and sink connections on addr (ephemeral port) until stop() or destruction. Every
// connection first handshakes in the listener's gate (wire/handshake_gate.h: all at once, each
// under kDataHandshakeTimeoutMs, the oldest of kMaxPendingTestHandshakes closed to make room), so
// connections that never prove the token cannot keep the real client out. Each admitted
// connection has its own thread; at most kMaxTestConnections at once (only token holders get
// that far), with no limit over the server's life: finished threads are reaped as the server goes.
inline constexpr size_t kMaxTestConnections = 128;
inline constexpr int kMaxPendingTestHandshakes = 1024;
inline constexpr int kDataHandshakeTimeoutMs = 5000;
class TcpTestServer {
 public:
  TcpTestServer(const std::string& addr, std::string token, int idle_timeout_ms,
                const std::string& ifname = "");
  ~TcpTestServer();
  TcpTestServer(const TcpTestServer&) = delete;
  TcpTestServer& operator=(const TcpTestServer&) = delete;
  uint16_t port() const { return port_; }
  void stop();
  // Connections refused: handshakes that failed (wrong token, timed out, evicted) and admitted ones
  // over kMaxTestConnections.
  uint64_t rejected_connections() const;

 private:
  void accept_loop();
  void reap_finished();  // joins the threads of connections that ended (mu_ held)
  void serve(wire::Fd fd, wire::PeerClaims claims);
  wire::Fd listen_fd_;
  std::string token_;
  int idle_timeout_ms_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rejected_{0};
  std::mutex mu_;
  std::set<int> open_fds_;
  std::vector<std::thread> workers_;
  std::vector<std::thread::id> finished_;
  std::unique_ptr<wire::HandshakeGate> gate_;  // used by the acceptor thread only
  std::thread acceptor_;
};

// The client side of the data-connection handshake (purpose "tcp_" + mode); throws wire::WireError
// (kImpostor when the server cannot prove the token, kBadToken when it refused ours). Used by
// measure_link and by tests that present a wrong token on purpose.
void peer_handshake(int fd, const std::string& token, const std::string& mode, int timeout_ms);

}  // namespace fabkit::tcp
