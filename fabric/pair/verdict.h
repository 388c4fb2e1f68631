// The pure half of `fabcheck pair`: which interface pair to use, the link-rate model, the ranking
// of transports, and the findings. No I/O: everything comes from PairFacts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "fabric/pair/pair_facts.h"
#include "fabric/pair/rdma_row.h"

namespace fabkit::pair {

// Candidates from an agent's interfaces[] (net section shape): up, running, IPv4, not loopback.
// Decoys are kept on purpose: they are measured and reported as unreachable or slower (those on a
// subnet no peer shares are refused before that: session_peers.h). A list or field of the wrong
// type throws std::invalid_argument naming it ("interfaces[2]: field 'up' ...").
std::vector<Candidate> candidates_from_interfaces(const Json& interfaces);

// The best reachable link: highest single-stream bandwidth, then lowest median RTT. nullopt when
// none is open.
std::optional<size_t> choose_link(const std::vector<LinkResult>& links);

// Link rate in Gbit/s from both ends' speed_mbps (the slower end bounds the link); nullopt when
// either is unknown — never a silent default (NCCL's own "defaulting to 10 Gbps" for a link it
// cannot read is the kind of guess that hides a slow link).
std::optional<double> link_rate_gbit_s(const Candidate& a, const Candidate& b);
// busbw (GB/s) as a fraction of a link rate (Gbit/s): busbw * 8 / rate.
double link_fraction(double busbw_gbps, double rate_gbit_s);

struct RankedTransport {
  std::string transport;
  std::string status;
  double peak_busbw_gbps = 0;
  uint64_t peak_bytes = 0;
  bool all_correct = false;
  std::optional<double> link_rate_gbit_s;
  std::optional<double> link_fraction;
  std::optional<double> vs_raw_exchange;  // peak busbw / raw exchange's busbw at the same size
  std::string via;  // where it ran (rdma_row.h transport_via); "" unknown
};

struct Verdict {
  std::vector<RankedTransport> ranking;  // ok + correct first by peak busbw, then the rest
  std::optional<size_t> link;            // chosen link index
  std::optional<std::string> transport;  // recommended (never the raw exchange: it is a ceiling)
  std::string reason;
  RdmaRow rdma;  // the RDMA row of the comparison and why that one (rdma_row.h)
};

Verdict compute_verdict(const PairFacts& f);
// pair.transport_crashed when a rank's runner child died (its document's extra.error is
// runner_crashed: fabric/agent/transport_child.h), naming the hosts (hosts[rank]) and the first
// one's reason (the signal and the child's last stderr lines); nullopt otherwise. Shared with
// the N-host judge.
std::optional<Finding> crashed_runner_finding(const TransportResult& t,
                                              const std::vector<std::string>& hosts);
std::vector<Finding> judge_pair(const PairFacts& f, const Verdict& v);
// pair.peer_address_refused (info), one per address a host claimed that a peer was not let
// contact (session_peers.h); shared with the N-host judge.
std::vector<Finding> refused_address_findings(const std::vector<RefusedAddress>& refused);
// Every finding of a pair run: judge_pair's, then the RDMA RC test's (rdma_rc_plan.h).
std::vector<Finding> pair_findings(const PairFacts& f, const Verdict& v);

// The transport that measures the wire, not an all-reduce.
inline constexpr const char* kRawExchange = "raw-exchange";

}  // namespace fabkit::pair
