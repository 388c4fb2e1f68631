// What every gather receives: where the system is (roots), the environment snapshot, the user's
// options, and the verbs seam (null when libibverbs is absent or under --sysroot, in which case
// sysfs is the source).
#pragma once

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

struct NodeOptions {
  std::optional<std::string> peer;                 // --peer HOST: choose the interface on its subnet
  std::optional<std::filesystem::path> topo_file;  // --topo FILE (else NCCL_TOPO_FILE)
  // Live runs read the RDMA port error counters twice this far apart and judge what rose;
  // 0 reads once (absolute values only). --counter-interval-ms. 50 ms keeps `fabcheck node`
  // within its 100 ms budget on a GPU node (issue #11) while a link that is failing now shows.
  int rdma_counter_interval_ms = 50;
  // --nvml-replay FILE: NVML answers recorded with --nvml-record (on a GPU node) replayed through
  // the fixture-driven NVML table instead of this machine's driver (docs/gpu-node.md).
  std::optional<std::filesystem::path> nvml_replay;
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
