// What every gather receives: where the system is (roots), the environment snapshot, the user's
// options, and the verbs seam (null when libibverbs is absent or under --sysroot, in which case
// sysfs is the source).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "common/environment.h"
#include "common/progress.h"
#include "common/roots.h"

namespace fabkit {
namespace verbs {
class VerbsApi;
}

// `fabcheck node --since`: judge the kernel log from this point on (docs/findings/kernel_log.md).
struct KernelLogSince {
  std::string text;  // as given: "2h", "2026-11-26T08:00:00Z"
  std::optional<double>
      seconds_ago;  // a duration: this long before now (a capture: before its end)
  std::optional<int64_t> unix_time_s;  // an RFC 3339 time
};

struct NodeOptions {
  std::optional<std::string> peer;                 // --peer HOST: choose the interface on its subnet
  std::optional<std::filesystem::path> topo_file;  // --topo FILE (else NCCL_TOPO_FILE)
  // Live runs read the RDMA port error counters twice this far apart and judge what rose;
  // 0 reads once (absolute values only). --counter-interval-ms. 50 ms keeps `fabcheck node`
  // within its 100 ms budget on a GPU node (issue #11) while a link that is failing now shows.
  // The PCIe AER totals are read twice at least this far apart too, across the other probes.
  int rdma_counter_interval_ms = 50;
  // --nvml-replay FILE: NVML answers recorded with --nvml-record (on a GPU node) replayed through
  // the fixture-driven NVML table instead of this machine's driver (docs/gpu-node.md).
  std::optional<std::filesystem::path> nvml_replay;
  // --qos-replay FILE: the DCB netlink and ethtool answers of the RoCE netdevs, replayed instead of
  // this kernel's (tests/fixtures/roce_qos/README.md); sysfs still comes from the roots.
  std::optional<std::filesystem::path> qos_replay;
  // --ib-qos-replay FILE: the PortInfo, SLtoVLMappingTable and PathRecord answers of the IB ports,
  // replayed instead of this host's umad devices (tests/fixtures/ib_qos/README.md).
  std::optional<std::filesystem::path> ib_qos_replay;
  // --ofi-replay FILE: libfabric's answers (fi_version, fi_getinfo) recorded with --ofi-record on
  // another node, replayed instead of this machine's libfabric (tests/fixtures/libfabric/).
  std::optional<std::filesystem::path> ofi_replay;
  // The fabcheck executable whose hidden `ofi-discover` subcommand lists libfabric's providers
  // in a child process (ofi/libfabric_child.h): "/proc/self/exe" in fabcheck. Unset (tests that
  // are not fabcheck): in this process.
  std::optional<std::string> ofi_discovery_program;
  // --peer-gid GID: the IB QoS probe also asks the SA for the PathRecord to this GID.
  std::optional<std::string> ib_peer_gid;
  // The kernel log window; nullopt: every record since boot that the ring buffer still holds.
  std::optional<KernelLogSince> kernel_log_since;
};

struct ProbeContext {
  SystemRoots roots;
  Environment env;
  NodeOptions options;
  verbs::VerbsApi* verbs = nullptr;
  // Which probe runs now, for `fabcheck node`'s progress line (the GPU and hwloc probes can take
  // seconds on a big node); null shows nothing (agents, fabtrain, tests).
  ProgressSink* progress = nullptr;
};

}  // namespace fabkit
