// What `fabcheck pair` records of the RDM point-to-point test over libfabric (fabric/ofi_rdm):
// which provider, why it ran or not, both agents' answers and the figures, beside the TCP
// test's figure on the same pair.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/json.h"

namespace fabkit::pair {

// --ofi-provider and the test's sizes. provider "": efa when both nodes have EFA devices, else
// the step is skipped, naming why.
struct OfiRdmPlan {
  std::string provider;
  uint64_t bw_size_bytes = 1 << 20;  // fi_rma_bw's largest default size
  int bw_messages = 256;
  int window = 16;
  int lat_iters = 1000;  // 8-byte ping-pongs
  int warmup_iters = 50;
};

struct OfiRdmFacts {
  std::string status = "skipped";  // "ran" (figures below), "skipped" (reason), "failed" (reason)
  std::string provider;            // the provider asked of both agents
  std::string selected_by;         // "--ofi-provider" | "EFA devices on both hosts"
  std::string reason;
  OfiRdmPlan plan;
  Json client = nullptr, server = nullptr;  // the agents' answers (A is the client)
  std::optional<double> bandwidth_gbps, latency_us;
  std::optional<double> tcp_gbps;      // the chosen link's multi-stream TCP figure
  std::optional<double> ratio_to_tcp;  // bandwidth_gbps / tcp_gbps
};

Json to_json(const OfiRdmFacts& f);

}  // namespace fabkit::pair
