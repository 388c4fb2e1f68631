// The pair step "ofi_rdm": the RDM point-to-point test over libfabric between the two agents
// (fabric/agent/agent_ofi.h runs each side in a runner child). Which provider: --ofi-provider,
// else efa when both node reports show EFA devices (rdma devices whose driver is efa); otherwise
// the step is skipped and says why ("no EFA devices ...", "not built with libfabric", "libfabric
// not loadable on B: ...").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "fabric/pair/agent_client.h"
#include "fabric/pair/pair_controller.h"

namespace fabkit::pair {

struct OfiRdmChoice {
  std::optional<std::string> provider;  // nullopt: skip
  std::string selected_by;
  std::string skip_reason;
};

// Pure: from the two node reports (their rdma and libfabric sections) and --ofi-provider.
OfiRdmChoice choose_ofi_provider(const std::string& host_a, const Json& report_a,
                                 const std::string& host_b, const Json& report_b,
                                 const std::string& requested);

// The agents' EFA devices in a node report (rdma.devices[].driver == "efa").
int efa_device_count(const Json& report);

// pair.ofi_rdm_failed, pair.ofi_rdm_skipped, pair.ofi_rdm_slower_than_tcp (docs/findings/pair.md).
std::vector<Finding> judge_ofi_rdm(const PairFacts& f);

// Runs the test on the chosen link (A client, B server) and fills f.ofi_rdm.
void run_ofi_rdm_step(PairFacts& f, AgentClient& A, AgentClient& B, const PairOptions& o);

}  // namespace fabkit::pair
