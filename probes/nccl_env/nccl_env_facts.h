// Probe 7, NCCL settings: every NCCL_*/TORCH_NCCL_* variable (and the few others NCCL jobs
// depend on) with the source that supplied it. NCCL reads NCCL_CONF_FILE (or ~/.nccl.conf), then
// /etc/nccl.conf, with setenv(..., overwrite=0) (src/misc/param.cc setEnvFile/initEnv): the
// process environment wins over both files, and the first file over the second.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "probes/net/net_facts.h"
#include "probes/probe_context.h"

namespace fabkit::probes {

struct NcclVariable {
  std::string name;
  std::string value;
  std::string source;  // "environment" or the config file path
  std::vector<std::string> overridden;  // "<path>: <value>" lines that lost to this one
};

struct NcclConfFile {
  std::string path;
  std::string role;  // "NCCL_CONF_FILE" | "~/.nccl.conf" | "/etc/nccl.conf"
  bool present = false;
  std::optional<std::string> error;  // present but unreadable
  std::vector<std::pair<std::string, std::string>> entries;  // as NCCL reads them, in order
  std::vector<std::string> issues;   // lines NCCL reads differently than they look
};

struct NcclEnvFacts {
  std::vector<NcclVariable> variables;  // sorted by name
  std::vector<NcclConfFile> files_read;
  std::optional<std::string> topo_file;  // NCCL_TOPO_FILE value, when set
  bool topo_file_present = false;
};

// The RDMA facts this judge needs, as plain values (filled from the rdma probe in node_probe.cc).
struct RdmaPortBrief {
  std::string device;      // "mlx5_0"
  int port = 1;
  std::string link_layer;  // "InfiniBand" | "Ethernet"
  bool active = false;
};

NcclEnvFacts gather_nccl_env(const ProbeContext& ctx);
// Pure parse of one config file's text, exactly as setEnvFile() reads it.
NcclConfFile parse_nccl_conf(const std::string& path, const std::string& role,
                             const std::string& text);
// Merge: environment first, then files in order, first setter wins (overwrite=0).
std::vector<NcclVariable> resolve_nccl_variables(const Environment& env,
                                                 const std::vector<NcclConfFile>& files);
bool is_nccl_relevant(const std::string& name);
const NcclVariable* find_variable(const NcclEnvFacts& f, const std::string& name);
// The settings the net probe applies, with their sources.
NetSettings net_settings(const NcclEnvFacts& f);

// rdma_ports: every RDMA port found (empty: no devices); nullopt when the RDMA facts are unknown,
// which skips the NCCL_IB_DISABLE and NCCL_IB_HCA checks.
std::vector<Finding> judge_nccl_env(const NcclEnvFacts& f,
                                    const std::optional<std::vector<RdmaPortBrief>>& rdma_ports);
Json to_json(const NcclEnvFacts& f);

// Known names (NCCL's documented variables and the ones libnccl 2.28 reads), and value types.
enum class NcclValueKind { kString, kInt, kBool01, kEnum };
struct NcclKnownVar {
  const char* name;
  NcclValueKind kind;
  const char* allowed;  // for kEnum: "|"-separated accepted words (case-insensitive)
};
const NcclKnownVar* find_known_nccl_var(const std::string& name);
// Closest known name within edit distance 2 ("NCCL_IB_HCAS" -> "NCCL_IB_HCA"), or empty.
std::string closest_known_nccl_var(const std::string& name);

}  // namespace fabkit::probes
