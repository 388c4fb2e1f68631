#include "fabric/allreduce/allreduce_types.h"

#include "common/errors.h"

namespace fabkit::fabric {

Json to_json(const SizeResult& s) {
  Json j;
  j["bytes"] = s.bytes;
  j["time_us"] = s.time_us;
  j["best_time_us"] = s.best_time_us;
  j["algbw_gbps"] = s.algbw_gbps;
  j["busbw_gbps"] = s.busbw_gbps;
  j["correct"] = s.correct;
  return j;
}

Json to_json(const TransportRun& r) {
  Json j;
  j["transport"] = r.transport;
  j["status"] = r.status;
  j["reason"] = r.reason;
  j["sizes"] = Json::array();
  for (const auto& s : r.sizes) j["sizes"].push_back(to_json(s));
  j["extra"] = r.extra.is_null() ? Json::object() : r.extra;
  return j;
}

std::vector<uint64_t> default_sizes_bytes() {
  // nccl-tests -b 8 -e 256M -f 4 stops at 128 MiB (8 * 4^k never hits 2^28); the issue asks for
  // the sweep to reach 256 MiB, so the end point is added as the last size.
  constexpr uint64_t kMax = 256ull << 20;
  std::vector<uint64_t> sizes;
  for (uint64_t b = 8; b <= kMax; b *= 4) sizes.push_back(b);
  if (sizes.back() != kMax) sizes.push_back(kMax);
  return sizes;
}

double algbw_gbps(uint64_t bytes, double time_us) {
  if (time_us <= 0) return 0;
  return static_cast<double>(bytes) / (time_us * 1e-6) / 1e9;
}

double allreduce_busbw_gbps(double algbw, int world_size) {
  if (world_size < 1) return 0;
  return algbw * 2.0 * (world_size - 1) / world_size;
}

void validate_spec(const AllreduceSpec& s) {
  auto bad = [](const std::string& field, const std::string& value, const std::string& fix) {
    throw UsageError("all-reduce spec: " + field + " = " + value + " is invalid: " + fix);
  };
  if (s.world_size < 2) bad("world_size", std::to_string(s.world_size), "use 2 or more ranks");
  if (s.rank < 0 || s.rank >= s.world_size)
    bad("rank", std::to_string(s.rank), "use 0 .. world_size-1");
  if (s.token.empty() || s.token.size() > 256)
    bad("token", "<" + std::to_string(s.token.size()) + " bytes>", "use a 1..256 byte session token");
  if (s.iters < 1) bad("iters", std::to_string(s.iters), "use 1 or more timed iterations");
  if (s.warmup_iters < 0) bad("warmup_iters", std::to_string(s.warmup_iters), "use 0 or more");
  if (s.timeout_ms < 1) bad("timeout_ms", std::to_string(s.timeout_ms), "use a positive timeout");
  if (s.port == 0) bad("port", "0", "use a TCP port 1..65535");
  if (s.world_size == 2) {
    if (s.rank == 1 && s.peer_addr.empty()) bad("peer_addr", "\"\"", "rank 1 needs rank 0's address");
  } else if (static_cast<int>(s.ring_addrs.size()) != s.world_size) {
    bad("ring_addrs", std::to_string(s.ring_addrs.size()) + " entries",
        "give one address per rank when world_size > 2");
  }
  for (uint64_t b : s.sizes_bytes) {
    // float32 elements: nccl-tests rounds a size down to whole elements; below one there is nothing.
    if (b < 4) bad("sizes_bytes", std::to_string(b), "sizes must be at least 4 bytes (one float32)");
  }
}

}  // namespace fabkit::fabric
