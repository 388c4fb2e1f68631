// `fabcheck pair A B`: launch an agent on each host, gather their node facts, measure every
// candidate interface pair (TCP connect, RTT, 1- and N-stream bandwidth), check the rendezvous
// port, run the all-reduce transports both agents can run, and return the facts for the verdict.
// Failures are recorded as steps with a finding code; the run never hangs (every step has a
// deadline) and never leaves an agent behind (bye, then the process group is stopped).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/progress.h"
#include "common/report.h"
#include "fabric/launch/launcher.h"
#include "fabric/launch/ship.h"
#include "fabric/pair/pair_facts.h"

namespace fabkit::pair {

struct PairOptions {
  std::string host_a, host_b;
  std::string launcher_text = "ssh";
  launch::LauncherSpec launcher;
  std::string agent_path;        // fabcheck on the hosts (default: this binary's path)
  // --ship: the controller's binary goes to each host and runs there (launch/ship.h); null =
  // agent_path is installed on the hosts. Shared by the parallel runs of fabcheck cluster.
  std::shared_ptr<const launch::Shipment> ship;
  uint16_t port = 29400;         // the rendezvous port (MASTER_PORT) to check
  std::vector<uint64_t> sizes_bytes;
  int iters = 20, warmup_iters = 5;
  int timeout_ms = 10000;        // bound on each control step (launch+hello, connect, a request)
  int transport_timeout_ms = 300000;  // bound on one transport's whole size sweep
  int pings = 1000, streams = 4, bandwidth_ms = 1000;
  std::vector<std::string> transports;  // empty: every transport both agents can run
  // The RDMA RC test (rdma_rc_plan.h): write_bw messages of rc_size_bytes, rc_iters of them;
  // send_lat rc_lat_iters ping-pongs of 2 B. perftest's defaults; a slow link (soft-RoCE under
  // emulation moves ~0.1 Gbit/s) finishes with fewer (--rc-iters, --rc-size, --rc-lat-iters).
  RcPlan rc;
  // The RDM test over libfabric (ofi_rdm_step.h): --ofi-provider, --ofi-messages.
  OfiRdmPlan ofi;
  // What the run is measuring now, for the CLI's progress line; null shows nothing. Not shared
  // between parallel runs (the cluster runner gives its pair runs none).
  ProgressSink* progress = nullptr;
};

PairFacts run_pair(const PairOptions& o);

// The report (the verdict's findings and the "pair" section) is pair::build_pair_report
// (fabric/pair/pair_document.h).

// nccl-tests style sweep: 8 B .. 128 MiB x4 per step, then the end point 256 MiB (-e 256M).
std::vector<uint64_t> default_pair_sizes();
// "8,1K,64M,1G" (binary suffixes K M G). Throws UsageError naming the bad item.
std::vector<uint64_t> parse_sizes(const std::string& text);

}  // namespace fabkit::pair
