// Probe: the NCCL net plugin NCCL would load on this node (aws-ofi-nccl on AWS EFA; GPUDirect-TCPX,
// TCPXO/FasTrak and gIB on GCP), found the way NCCL and the dynamic loader find it, read from its
// ELF file (never loaded: plugin_elf.h), with the API versions it offers against the NCCL the
// loader finds. NCCL falls back to its own IB or socket transport silently when no plugin loads,
// which on EFA means TCP sockets at a fraction of the bandwidth.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "probes/nccl_env/nccl_env_facts.h"
#include "probes/nccl_net/plugin_elf.h"
#include "probes/probe_context.h"

namespace fabkit::probes {

// One directory the dynamic loader searches for a name without a '/', in its order.
struct LibrarySearchDir {
  std::string dir;   // as on the node ("/opt/amazon/ofi-nccl/lib")
  std::string from;  // "LD_LIBRARY_PATH" | "/etc/ld.so.conf.d/x.conf" | "default"
};

// A library file examined: the plugin, or libnccl itself.
struct LibraryFile {
  std::string path;  // as on the node
  ElfLibrary elf;
  std::string kind;     // "aws-ofi-nccl" | "gpudirect-tcpx" | "gpudirect-tcpxo" | "gib" |
                        // "nccl" | "unknown"
  std::string version;  // "1.21.1"; "" when the file does not say
  // Why root should not load it (common/trusted_path.h): the message and the fix; nullopt when it
  // passes or was not checked (trust_checked).
  std::optional<std::string> distrust;
  std::string distrust_fix;
};

// A name NCCL hands to dlopen, in NCCL's order, and where the loader would find it.
struct PluginCandidate {
  std::string name;                 // "libnccl-net.so", "libnccl-net-ofi.so", "/opt/x/y.so"
  std::optional<std::string> path;  // the file the loader would open; nullopt: not found
};

struct NcclNetFacts {
  // NCCL_NET_PLUGIN as NCCL reads it (environment, then NCCL's config files), and its source.
  std::optional<std::string> requested;
  std::string requested_source;
  bool disabled = false;                // NCCL_NET_PLUGIN=none: NCCL loads no external plugin
  std::optional<std::string> nccl_net;  // NCCL_NET: the network NCCL must use ("IB", "Socket", …)
  std::optional<std::string> nccl_proto;  // NCCL_PROTO
  std::vector<LibrarySearchDir> search_dirs;
  std::vector<std::string> search_issues;  // LD_LIBRARY_PATH entries the loader reads oddly
  std::vector<PluginCandidate> candidates;
  std::optional<LibraryFile> plugin;  // the first candidate found: what NCCL would open
  std::optional<LibraryFile> nccl;    // libnccl.so.2 as the loader would find it
  bool trust_checked = false;         // false under --sysroot: a capture's owners mean nothing
  // GCP (gcp_plugins.cc): DMI's sys_vendor/product_name ("Google", "Google Compute Engine"; the
  // machine type itself is not in DMI), the GPUDirect plugins' settings as NCCL's merge gives
  // them, and whether NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX's directory exists.
  std::string dmi_vendor, dmi_product;
  std::map<std::string, std::string> gcp_settings;
  std::optional<bool> unix_client_prefix_exists;
};

// The NCCL net plugin API versions (ncclNetPlugin_vN) NCCL 2.<minor> dlsym()s, newest first.
// Empty for a minor the table does not know (older than 2.4, or newer than the table).
std::vector<int> nccl_net_api_versions(int minor);
// The newest NCCL minor the table knows (2.<N>).
int newest_known_nccl_minor();
// The first NCCL release that loads API version v ("2.20" for v8); "" when unknown.
std::string nccl_release_introducing(int api_version);
// "2.28.9" -> {2, 28, 9}; nullopt for anything else.
std::optional<std::vector<int>> parse_dotted_version(const std::string& v);

// Pure pieces of the search, for tests.
// The directories of ld.so.conf's text (comments, "include" and "hwcap" lines handled by the
// caller through `include`): the plain directory lines, in order.
struct LdSoConfLine {
  std::string directory;  // a directory line
  std::string include;    // an "include GLOB" line's glob
};
std::vector<LdSoConfLine> parse_ld_so_conf(const std::string& text);
// The names NCCL dlopen()s for NCCL_NET_PLUGIN (nullopt: unset), in order (src/plugin/net.cc
// initPluginLibsOnceFunc, src/plugin/plugin_open.cc openPluginLib, NCCL 2.30).
std::vector<std::string> plugin_names_to_try(const std::optional<std::string>& requested);
// What the plugin file is, from the version texts in its .rodata; the prefixes it looks for.
void classify_library(LibraryFile& f);
std::vector<std::string> version_markers();

// The GCP GPUDirect plugins: what each needs set (gcp_plugins.cc has the table and its sources).
struct GcpPluginNeed {
  const char* kind;      // LibraryFile::kind
  const char* machines;  // "A3 High (a3-highgpu-8g)"
  const char* variable;  // "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"
  const char* example;   // the value Google's own configs use: "eth1,eth2,eth3,eth4"
  const char* source;
};
const std::vector<GcpPluginNeed>& gcp_plugin_needs();
bool is_gcp_setting(const std::string& name);
void gather_gcp(const ProbeContext& ctx, const NcclEnvFacts& nccl_env, NcclNetFacts& f);
void judge_gcp(const NcclNetFacts& f, std::vector<Finding>& out);

NcclNetFacts gather_nccl_net(const ProbeContext& ctx, const NcclEnvFacts& nccl_env);

// efa_devices: the RDMA devices whose driver is efa (AWS Elastic Fabric Adapter).
std::vector<Finding> judge_nccl_net(const NcclNetFacts& f,
                                    const std::vector<std::string>& efa_devices);
Json to_json(const NcclNetFacts& f);

}  // namespace fabkit::probes
