// Probe 13, libfabric: the library the node's OFI jobs load (aws-ofi-nccl, Open MPI on EFA), its
// release and its reliable-datagram providers with their capabilities, through the ofi/ seam
// (dlopen'd live, or `--ofi-replay FILE`). Judged against the node's EFA devices (the rdma probe's
// devices whose driver is efa) and the FI_* settings the nccl_env probe gathered.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "ofi/ofi_api.h"
#include "probes/probe_context.h"

namespace fabkit::probes {

struct LibfabricFacts {
  // False under --sysroot without --ofi-replay: this machine's libfabric says nothing about a
  // captured node's.
  bool gathered = false;
  std::string not_gathered_reason;
  ofi::OfiDiscovery discovery;
};

// What the judge needs from the other probes, as plain values (node_probe.cc fills it).
struct LibfabricContext {
  int efa_devices = 0;                         // RDMA devices bound to the efa driver
  std::optional<std::string> fi_provider;      // FI_PROVIDER, as the job would see it
  std::optional<std::string> use_device_rdma;  // FI_EFA_USE_DEVICE_RDMA
};

LibfabricFacts gather_libfabric(const ProbeContext& ctx);
// The same answer through a given seam (tests; `--ofi-record` writes discovery_to_json of it).
LibfabricFacts gather_libfabric(ofi::OfiApi& api);

std::vector<Finding> judge_libfabric(const LibfabricFacts& f, const LibfabricContext& c);
Json to_json(const LibfabricFacts& f);

// The provider names FI_PROVIDER selects among `offered`, as libfabric reads it (a comma list,
// each name matched against the provider name's first part: "tcp" selects "tcp;ofi_rxm"; a
// leading '^' excludes the listed ones). Pure: tested on its own.
std::vector<std::string> providers_selected(const std::string& fi_provider,
                                            const std::vector<std::string>& offered);

// The minimum libfabric releases aws-ofi-nccl (aws/aws-ofi-nccl@2daf7d303aa1) asks for: 1.22 for
// the efa provider (src/nccl_ofi_net.cpp, nccl_net_ofi_query_provider_capabilities: "EFA provider
// requires at least libfabric version 1.22.0", then -ENOTSUP), 1.11 for any provider
// (m4/check_pkg_libfabric.m4: "Libfabric 1.11.0 or later").
inline constexpr int kPluginEfaMinMajor = 1, kPluginEfaMinMinor = 22;
inline constexpr int kPluginMinMajor = 1, kPluginMinMinor = 11;

}  // namespace fabkit::probes
