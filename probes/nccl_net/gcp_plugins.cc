// GCP's NCCL net plugins: GPUDirect-TCPX (A3 High), GPUDirect-TCPXO / FasTrak (A3 Mega) and gIB
// (RDMA over ConnectX-7: A3 Ultra, A4). Each needs settings NCCL itself knows nothing about; left
// unset, the plugin starts on the wrong interfaces or not at all.
//
// The machine type is not in DMI on GCE (sys_vendor "Google", product_name "Google Compute
// Engine"): it is only in the metadata server, which fabcheck does not ask (no network call).
// So the plugin found decides which settings are checked, and DMI only says the node is on GCE.
#include <strings.h>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "probes/nccl_net/nccl_net_facts.h"

namespace fabkit::probes {
namespace {

const char* kTcpxConfig =
    "GoogleCloudPlatform/container-engine-accelerators@992db81 gpudirect-tcpx/nccl-config.yaml";
const char* kTcpxoReadme =
    "GoogleCloudPlatform/container-engine-accelerators@992db81 gpudirect-tcpxo/README.md";

// NCCL's own transports: any other NCCL_NET value names a plugin's network.
bool internal_network(const std::string& n) {
  return strcasecmp(n.c_str(), "IB") == 0 || strcasecmp(n.c_str(), "Socket") == 0;
}

}  // namespace

const std::vector<GcpPluginNeed>& gcp_plugin_needs() {
  static const std::vector<GcpPluginNeed> kNeeds = {
      // The data NICs and the control NIC: run-nccl.sh in kTcpxConfig exports both for every
      // run (the plugin reads them through TCPX_GET_ENV, google/nccl-plugin-gpudirecttcpx
      // src/misc/socket_utils.cc and src/connect.cc).
      {"gpudirect-tcpx", "A3 High (a3-highgpu-8g)", "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME",
       "eth1,eth2,eth3,eth4", kTcpxConfig},
      {"gpudirect-tcpx", "A3 High (a3-highgpu-8g)", "NCCL_GPUDIRECTTCPX_CTRL_DEV", "eth0",
       kTcpxConfig},
      // "NCCL configs" of kTcpxoReadme: the eight data NICs and the control NIC.
      {"gpudirect-tcpxo", "A3 Mega (a3-megagpu-8g)", "NCCL_FASTRAK_IFNAME",
       "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8", kTcpxoReadme},
      {"gpudirect-tcpxo", "A3 Mega (a3-megagpu-8g)", "NCCL_FASTRAK_CTRL_DEV", "eth0", kTcpxoReadme},
  };
  return kNeeds;
}

bool is_gcp_setting(const std::string& name) {
  return name.rfind("NCCL_GPUDIRECTTCPX_", 0) == 0 || name.rfind("NCCL_FASTRAK_", 0) == 0;
}

void gather_gcp(const ProbeContext& ctx, const NcclEnvFacts& nccl_env, NcclNetFacts& f) {
  f.dmi_vendor = read_line(ctx.roots.sys / "class/dmi/id/sys_vendor").value_or("");
  f.dmi_product = read_line(ctx.roots.sys / "class/dmi/id/product_name").value_or("");
  for (const auto& v : nccl_env.variables)
    if (is_gcp_setting(v.name)) f.gcp_settings[v.name] = v.value;
  // The plugin's receive-datapath manager listens on a UNIX socket under this prefix (default
  // /tmp, src/flags.cc; GKE mounts the manager's /run/tcpx there, gpudirect-tcpx/nccl-test.yaml).
  auto it = f.gcp_settings.find("NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX");
  if (it != f.gcp_settings.end() && !it->second.empty() && it->second.front() == '/')
    f.unix_client_prefix_exists = path_is_directory(ctx.roots.root / it->second.substr(1));
}

void judge_gcp(const NcclNetFacts& f, std::vector<Finding>& out) {
  // NCCL_NET names the one network NCCL may use (src/plugin/net.cc: a plugin whose name differs
  // is skipped); a plugin's network with no plugin to provide it ends in "Failed to initialize
  // any NET plugin" (ncclInvalidUsage) at the first communicator.
  if (f.nccl_net && !f.nccl_net->empty() && !internal_network(*f.nccl_net) && !f.plugin &&
      !f.disabled) {
    bool gib = strcasecmp(f.nccl_net->c_str(), "gIB") == 0;
    out.push_back(fail(
        "nccl_net.network_without_plugin", "NCCL_NET",
        "NCCL_NET=" + *f.nccl_net +
            " names a net plugin's network, but the loader finds no net "
            "plugin: every communicator fails with \"Failed to initialize any NET plugin\"",
        gib ? "export LD_LIBRARY_PATH=/usr/local/gib/lib64:$LD_LIBRARY_PATH (source "
              "/usr/local/gib/scripts/set_nccl_env.sh), or unset NCCL_NET on a node without gIB"
            : "put the plugin's lib directory on LD_LIBRARY_PATH, or unset NCCL_NET"));
  }
  if (!f.plugin) return;
  for (const auto& need : gcp_plugin_needs()) {
    if (f.plugin->kind != need.kind) continue;
    auto it = f.gcp_settings.find(need.variable);
    if (it != f.gcp_settings.end() && !it->second.empty()) continue;
    out.push_back(warn("nccl_net.gcp_setting_missing", need.variable,
                       std::string(need.variable) + " is unset, but NCCL would load " +
                           f.plugin->kind + " (" + f.plugin->path + "), the plugin of " +
                           need.machines + ", which needs it (" + need.source + ")",
                       std::string("export ") + need.variable + "=" + need.example +
                           " (the value Google's configuration uses; check the interface names "
                           "with `ip -br link`)"));
  }
  if (f.plugin->kind == "gpudirect-tcpx" && f.unix_client_prefix_exists == false)
    out.push_back(warn("nccl_net.tcpx_rxdm_dir_missing", "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX",
                       "NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX=" +
                           f.gcp_settings.at("NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX") +
                           " does not exist: the plugin cannot reach the receive-datapath manager "
                           "(tcpgpudmarxd) whose socket it expects there",
                       "start the tcpgpudmarxd container with that directory mounted (GKE: "
                       "/run/tcpx), or point the variable at the directory it uses"));
}

}  // namespace fabkit::probes
