// What `fabcheck pair` gathered between two hosts: plain structs filled by the controller
// (pair_controller.cc), judged by pure functions (verdict.h), made a report by pair_document.h and
// rendered by reports/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/latency_histogram.h"
#include "fabric/pair/ofi_rdm_facts.h"

namespace fabkit::pair {

// One step of the run, on one host or both: the record that lets a failure be named with the step
// that failed ("launch", "hello", "connect", "facts", "reachability", "port_check",
// "allreduce:gloo-tcp", "bye").
struct StepRecord {
  std::string step;
  std::string host;    // "" when the step spans both hosts
  std::string status;  // ok | failed | skipped
  std::string code;    // when failed: the finding code (pair.launch_failed, pair.agent_lost, ...)
  std::string error;
  double elapsed_ms = 0;
};

struct Candidate {
  std::string ifname;
  std::string addr;
  int prefix_len = 0;
  std::optional<int64_t> mtu;
  std::optional<int64_t> speed_mbps;
  std::string kind;  // from the net section: physical, veth, bridge, ...
};

// An address a host reported for itself that the controller does not let a peer contact
// (session_peers.h), with why.
struct RefusedAddress {
  std::string host;      // the host that claimed it
  std::string addr;      // the address
  std::string ifname;    // on which of its interfaces
  std::string receiver;  // the host that will not contact it ("" = none will)
  std::string reason;
};

struct AgentFacts {
  std::string host;                // as given on the command line
  Json hello = Json::object();     // the agent's stdout hello line
  Json report = Json();            // its node report (kind "node"), null when not gathered
  std::string interfaces_source;   // "net" | "getifaddrs"
  std::vector<Candidate> candidates;
  std::vector<std::string> transports;  // runners the agent's build can run
};

struct LinkResult {
  Candidate a, b;              // client side (host A) and server side (host B)
  std::string status;          // open | blocked | closed | unreachable | error
  std::string error;
  double connect_time_us = 0;
  double rtt_median_us = 0, rtt_p99_us = 0;
  int pings = 0;
  // Every round trip, bucketed (common/latency_histogram.h); checked on receipt to hold exactly
  // `pings` samples. Absent from an agent that does not send one.
  std::optional<LatencyHistogram> rtt_histogram;
  double single_stream_gbit_s = 0, multi_stream_gbit_s = 0;
  int streams = 0;
  Json raw = Json::object();  // the agent's measurement document
};

struct PortCheck {
  bool ran = false;
  uint16_t port = 0;
  std::string listen_addr, from_addr;  // A listens (rank 0 / MASTER_ADDR), B connects
  std::string listen_status;           // listening | in_use
  std::string status;                  // open | blocked | closed | unreachable | error
  std::optional<double> connect_time_us;
  int timeout_ms = 0;
  std::string error;
};

struct SizeRow {
  uint64_t bytes = 0;
  double time_us = 0, algbw_gbps = 0, busbw_gbps = 0;  // GB/s = 1e9 bytes/s (nccl-tests)
  bool correct = false;  // both ranks checked their result
  double best_time_us = 0;  // rank 0's fastest timed iteration; 0 = the rank did not say
};

struct TransportResult {
  std::string transport;
  std::string status;  // ok | unavailable | failed
  std::string reason;
  std::vector<SizeRow> sizes;  // rank 0's timings; correct = rank 0 && rank 1
  Json ranks = Json::array();  // both runners' full documents
  int port_attempts = 1;       // N-host rings: runs repeated because a rank's port was taken
};

// One HCA port on each host with the same link layer, both ACTIVE (node reports' rdma section).
struct RcPortPair {
  std::string hca_a, hca_b;
  int port_a = 1, port_b = 1;
  int gid_index_a = -1, gid_index_b = -1;  // the probe's RoCE v2 GID index; -1 on InfiniBand
  std::string link_layer;                   // "InfiniBand" | "Ethernet"
  std::optional<double> rate_gbps;          // the slower port's rate, when both report one
  std::string rail;                         // "10.0.3.0/24", "fe80:...::/64" or "index 2" (rdma_rails.h)
};

// The RC point-to-point test over one port pair: B is the server, A the client (as in the TCP
// tests). Each mode's documents are the agents' "rdma_rc" results, [A (client), B (server)].
struct RcPairResult {
  RcPortPair ports;
  std::string status;  // ok | failed (either mode failed)
  std::string reason;
  std::optional<double> bw_gbps;                      // write_bw, from the client's timing
  std::optional<double> lat_us_median, lat_us_p99;    // send_lat, client's half round trips
  std::optional<LatencyHistogram> lat_histogram;      // send_lat, every timed half round trip
  int path_mtu = 0;
  Json write_bw = Json::array(), send_lat = Json::array();
};

// perftest's defaults: ib_write_bw 64 KiB x 5000, ib_send_lat 2 B x 1000.
inline constexpr uint32_t kRcWriteBwBytes = 65536;
inline constexpr int kRcWriteBwIters = 5000;
inline constexpr uint32_t kRcSendLatBytes = 2;
inline constexpr int kRcSendLatIters = 1000;

// The sizes and counts the RC test runs with (fabcheck pair --rc-size, --rc-iters, --rc-lat-iters).
struct RcPlan {
  uint32_t write_bw_bytes = kRcWriteBwBytes;
  int write_bw_iters = kRcWriteBwIters;
  uint32_t send_lat_bytes = kRcSendLatBytes;
  int send_lat_iters = kRcSendLatIters;
};

struct RdmaRcFacts {
  std::string status = "skipped";  // ran | unavailable | skipped (an earlier step failed)
  std::string reason;              // why unavailable / skipped
  RcPlan plan;                     // what each port pair was asked to run
  std::vector<RcPairResult> pairs;
  std::string rail_method;             // "subnet" | "index" (fabric/pair/rdma_rails.h)
  int cross_rail_not_applicable = 0;   // combinations not tested: different rails, unreachable by design
  std::vector<std::string> unpaired;   // ports with no same-rail partner on the other host
};

struct PairFacts {
  std::string host_a, host_b;
  std::string launcher;
  int timeout_ms = 0;
  uint16_t rendezvous_port = 29400;
  AgentFacts a, b;
  std::vector<LinkResult> links;
  std::optional<size_t> chosen_link;  // index into links (the verdict's choice, used for the tests)
  PortCheck rendezvous;
  std::vector<TransportResult> transports;
  bool transports_skipped = false;  // --transports none
  RdmaRcFacts rdma_rc;
  OfiRdmFacts ofi_rdm;  // the RDM test over libfabric (ofi_rdm_step.h)
  std::vector<RefusedAddress>
      refused_addresses;  // claims no agent was let contact (session_peers.h)
  std::vector<StepRecord> steps;
};

}  // namespace fabkit::pair
