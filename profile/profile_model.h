// The cluster profile (cluster.json): what fabkit chose for every NCCL/Gloo/torch setting, why,
// and on what evidence, plus the per-node facts `fabcheck validate` re-checks. docs/profile.md
// describes every field; docs/schema/cluster.schema.json is the machine-readable schema.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fabkit::profile {

// Bumped on any incompatible change; readers refuse newer versions (they cannot know what a
// newer field means for the environment they would emit).
inline constexpr int kProfileSchemaVersion = 1;
inline constexpr const char* kProfileKind = "fabkit-profile";

// "measured": backed by a pair measurement (#3); "inferred": chosen from node facts only;
// "unmeasured": emit-env without a profile guessed from this node alone.
enum class Basis { kMeasured, kInferred, kUnmeasured };
const char* to_string(Basis b);
std::optional<Basis> basis_from_string(const std::string& s);

// One environment variable. value nullopt = deliberately left unset (the reason says why, e.g.
// NCCL >= 2.21 picks the RoCE GID itself); emitters skip it.
struct Setting {
  std::optional<std::string> value;
  Basis basis = Basis::kInferred;
  std::string reason;
  std::vector<std::string> evidence;  // "hostA rdma: mlx5_0:1 ACTIVE InfiniBand 200 Gb/s"
};

struct HcaPort {
  std::string device;             // "mlx5_0"
  int port = 1;
  std::string link_layer;         // "InfiniBand" | "Ethernet"
  std::optional<double> rate_gbps;
  std::optional<int> roce_v2_gid_index;
};

struct GpuNic {
  std::string gpu_bus_id;
  std::optional<std::string> nearest_nic;
  std::optional<std::string> path_level;  // PIX, PXB, PHB, SYS
};

struct NodeEntry {
  std::string hostname;
  std::optional<std::string> interface;  // the chosen socket interface on this host
  std::vector<HcaPort> hcas;             // the chosen, ACTIVE ports
  std::vector<GpuNic> locality;
  int gpu_count = 0;
  std::optional<std::string> topo_file;
  // The fabric stack the host had when the profile was built (docs/efa.md): `validate` reports
  // a node that drifted from it. Absent from the profile when the node report did not say.
  std::optional<int> efa_devices;
  std::optional<std::string> instance_type;       // DMI product_name (efa section)
  std::optional<std::string> libfabric_version;   // section libfabric, field version
  std::optional<std::string> net_plugin_version;  // section nccl_net_plugin, field version
};

struct ContainerNeeds {
  bool network_host = true;
  bool memlock_unlimited = false;  // RDMA nodes: ibv_reg_mr pins memory
  std::optional<std::string> shm_size;  // docker --shm-size value, "8g"
  std::vector<std::string> binds;       // host paths the job needs inside (nccl.conf, topo file)
  std::vector<std::string> devices;     // "/dev/infiniband"
};

struct InputRef {
  std::string kind;  // "node" | "pair" | "live"
  std::string hostname;
  std::string generated_at;
  std::string source;  // file path or "live probe"
};

struct Provenance {
  std::string created_at;  // RFC 3339 UTC
  std::string created_on;  // host that ran `fabcheck profile`
  std::string fabcheck_version;
  std::vector<InputRef> inputs;
  std::string content_hash;  // "sha256:<64 hex>", over the canonical content (docs/profile.md)
};

struct NcclInfo {
  std::optional<std::string> version;  // "2.18.3"; nullopt = unknown
  std::string version_source;          // "--nccl-version", "pair report", "unknown"
};

struct Profile {
  int schema_version = kProfileSchemaVersion;
  Provenance provenance;
  NcclInfo nccl;
  std::vector<NodeEntry> nodes;
  std::map<std::string, Setting> settings;                       // cluster-wide
  std::map<std::string, std::map<std::string, Setting>> hosts;  // per-host overrides
  ContainerNeeds container;
  // Filled by the reader, not serialized: the hash recomputed over what was read, so validate
  // can say the file was edited after it was made.
  std::string computed_hash;
};

// The variables a profile may set, in emission order.
const std::vector<std::string>& known_variables();
bool is_known_variable(const std::string& name);

}  // namespace fabkit::profile
