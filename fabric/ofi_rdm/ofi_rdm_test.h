// The RDM point-to-point test over libfabric (issue #40): one side of a test between two nodes on
// an FI_EP_RDM endpoint of a named provider (efa on EFA instances, tcp anywhere), like fabtests'
// fi_pingpong (round-trip latency at a small size) and fi_rma_bw (bandwidth over a window of
// large sends). The endpoint addresses are swapped through a function the caller gives (the
// agents' authenticated channel); fi_av_insert makes the peer's address usable.
//
// Every wait has a deadline: completions are polled with fi_cq_read until spec.timeout_ms passes
// (never fi_cq_sread without a bound), and a peer that stops answering ends the test with status
// "failed", code "timeout" and the phase it stopped in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/environment.h"
#include "common/json.h"

namespace fabkit::fabric::ofi_rdm {

struct OfiRdmSpec {
  std::string provider = "efa";  // fabric_attr->prov_name's core: "efa", "tcp"
  bool server = false;           // the server answers pings and receives the bandwidth window
  // The local address to bind (tcp: the interface toward the peer), or "" for the provider's
  // first domain (efa: one per device).
  std::string local_node;
  uint64_t bw_size_bytes = 1 << 20;
  int bw_messages = 256;  // messages of bw_size_bytes the client sends
  int window = 16;        // sends in flight
  uint64_t lat_size_bytes = 8;
  int lat_iters = 1000;
  int warmup_iters = 50;
  int timeout_ms = 10000;  // each wait for the peer, and the address swap
};

struct OfiRdmResult {
  std::string status = "failed";  // "ok", "failed", "unavailable" (no libfabric, no provider)
  std::string code;               // when not ok: "unavailable", "no_provider", "setup", "swap",
                                  // "timeout", "completion_error", "send_failed"
  std::string reason;
  std::string library;  // the libfabric loaded, and its release
  std::string provider, fabric, domain;
  double bandwidth_gbps = 0;  // the client's: bytes sent / time until the server acknowledged
  double latency_us = 0;      // half the mean round trip at lat_size_bytes
  uint64_t bytes_moved = 0;   // payload bytes this side sent and received
};

// Swaps this side's endpoint address for the peer's; throws std::runtime_error on failure.
using AddressSwap = std::function<std::string(const std::string& mine)>;

OfiRdmResult run_ofi_rdm(const OfiRdmSpec& spec, const Environment& env, const AddressSwap& swap);

Json to_json(const OfiRdmResult& r);

}  // namespace fabkit::fabric::ofi_rdm
