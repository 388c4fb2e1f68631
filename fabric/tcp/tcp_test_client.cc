#include <algorithm>
#include <cmath>
#include <cstring>

#include <sys/socket.h>

#include "fabric/tcp/tcp_test.h"
#include "fabric/wire/handshake.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::tcp {
namespace {

using wire::Clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

ConnectResult open_data(const LinkTestSpec& s, const std::string& mode) {
  ConnectResult c = connect_tcp(s.peer_addr, s.port, s.local_addr, s.connect_timeout_ms, s.local_ifname);
  if (c.status == ConnectStatus::kOpen) {
    set_nodelay(c.fd.get());
    try {
      peer_handshake(c.fd.get(), s.token, mode, std::max(s.connect_timeout_ms, kDataHandshakeTimeoutMs));
    } catch (const wire::WireError& e) {
      // Connected, but not to a server of this session (or it refused us): not "open".
      c.status = ConnectStatus::kError;
      c.fd.reset();
      c.message = "handshake with " + s.peer_addr + ":" + std::to_string(s.port) + ": " + e.what();
    }
  }
  return c;
}

struct StreamResult {
  uint64_t acked_bytes = 0;
  Clock::time_point end;
  std::string error;
};

// Sends for duration_ms (or the byte budget), half-closes, and waits for the receiver's count, so
// the time covers delivery, not just copying into the local socket buffer.
void run_stream(const LinkTestSpec& s, uint64_t budget, Clock::time_point stop_at,
                StreamResult* out) {
  try {
    ConnectResult c = open_data(s, "sink");
    if (c.status != ConnectStatus::kOpen) throw wire::WireError(wire::WireErrorKind::kIo, c.message);
    std::vector<char> chunk(256 << 10, 'f');
    uint64_t sent = 0;
    int io_timeout_ms = std::max(s.connect_timeout_ms, 5000);
    while (sent < budget && Clock::now() < stop_at) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), budget - sent));
      wire::write_all(c.fd.get(), chunk.data(), n, wire::deadline_in_ms(io_timeout_ms), "stream");
      sent += n;
    }
    ::shutdown(c.fd.get(), SHUT_WR);
    unsigned char ack[8];
    wire::read_exact(c.fd.get(), ack, 8, wire::deadline_in_ms(io_timeout_ms), "stream ack");
    uint64_t got = 0;
    for (unsigned char b : ack) got = (got << 8) | b;
    out->acked_bytes = got;
    out->end = Clock::now();
    if (got != sent)
      out->error = "receiver counted " + std::to_string(got) + " of " + std::to_string(sent) + " bytes";
  } catch (const std::exception& e) {
    out->error = e.what();
    out->end = Clock::now();
  }
}

// Returns Gbit/s over `streams` parallel connections; sets *bytes; throws on any stream error.
double bandwidth_gbit_s(const LinkTestSpec& s, int streams, uint64_t* bytes) {
  std::vector<StreamResult> results(static_cast<size_t>(streams));
  std::vector<std::thread> threads;
  auto t0 = Clock::now();
  auto stop_at = t0 + std::chrono::milliseconds(s.duration_ms);
  uint64_t budget = s.max_bytes / static_cast<uint64_t>(streams);
  for (int i = 0; i < streams; ++i)
    threads.emplace_back(run_stream, std::cref(s), budget, stop_at, &results[static_cast<size_t>(i)]);
  for (auto& t : threads) t.join();
  uint64_t total = 0;
  auto end = t0;
  for (auto& r : results) {
    if (!r.error.empty()) throw wire::WireError(wire::WireErrorKind::kIo, r.error);
    total += r.acked_bytes;
    end = std::max(end, r.end);
  }
  *bytes = total;
  double secs = std::chrono::duration<double>(end - t0).count();
  return secs > 0 ? static_cast<double>(total) * 8.0 / secs / 1e9 : 0.0;
}

}  // namespace

void peer_handshake(int fd, const std::string& token, const std::string& mode, int timeout_ms) {
  wire::client_handshake(fd, token, "peer", "tcp_" + mode, Json::object(), wire::deadline_in_ms(timeout_ms));
}

PingStats ping_stats(std::vector<double> v) {
  PingStats s;
  s.count = static_cast<int>(v.size());
  for (double x : v) s.histogram.add(x);
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto rank = [&](double p) {  // nearest-rank: the smallest sample with >= p of the data at or below
    size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[k == 0 ? 0 : k - 1];
  };
  s.median_us = rank(0.5);
  s.p99_us = rank(0.99);
  s.min_us = v.front();
  s.max_us = v.back();
  return s;
}

LinkMeasurement measure_link(const LinkTestSpec& s) {
  LinkMeasurement m;
  ConnectResult c = open_data(s, "ping");
  m.status = c.status;
  if (c.status != ConnectStatus::kOpen) {
    m.error = c.message;
    return m;
  }
  m.connect_time_us = c.connect_time_us;
  m.bound_to_device = c.bound_to_device;
  try {
    char msg[kPingBytes] = {};
    std::vector<double> rtts;
    int io_timeout_ms = std::max(s.connect_timeout_ms, 2000);
    for (int i = 0; i < s.pings + 10; ++i) {  // 10 warm-up round trips, not counted
      auto t0 = Clock::now();
      wire::write_all(c.fd.get(), msg, sizeof msg, wire::deadline_in_ms(io_timeout_ms), "ping");
      wire::read_exact(c.fd.get(), msg, sizeof msg, wire::deadline_in_ms(io_timeout_ms), "pong");
      if (i >= 10) rtts.push_back(us_since(t0));
    }
    m.rtt = ping_stats(std::move(rtts));
    c.fd.reset();
    m.single_stream_gbit_s = bandwidth_gbit_s(s, 1, &m.single_stream_bytes);
    m.streams = s.streams;
    if (s.streams > 1) m.multi_stream_gbit_s = bandwidth_gbit_s(s, s.streams, &m.multi_stream_bytes);
  } catch (const std::exception& e) {
    m.status = ConnectStatus::kError;
    m.error = e.what();
  }
  return m;
}

Json to_json(const LinkMeasurement& m) {
  Json j = {{"status", to_string(m.status)}, {"error", m.error.empty() ? Json() : Json(m.error)}};
  if (m.status != ConnectStatus::kOpen) return j;
  j["connect_time_us"] = m.connect_time_us;
  j["bound_to_device"] = m.bound_to_device;
  j["rtt"] = {{"count", m.rtt.count}, {"median_us", m.rtt.median_us}, {"p99_us", m.rtt.p99_us},
              {"min_us", m.rtt.min_us}, {"max_us", m.rtt.max_us}, {"message_bytes", kPingBytes},
              {"histogram", fabkit::to_json(m.rtt.histogram)}};
  j["single_stream_gbit_s"] = m.single_stream_gbit_s;
  j["single_stream_bytes"] = m.single_stream_bytes;
  j["streams"] = m.streams;
  j["multi_stream_gbit_s"] = m.streams > 1 ? Json(m.multi_stream_gbit_s) : Json();
  j["multi_stream_bytes"] = m.multi_stream_bytes;
  return j;
}

}  // namespace fabkit::tcp
