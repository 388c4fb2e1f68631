#include "fabric/nccl_runner/nccl_env.h"

#include <algorithm>

#include "common/errors.h"

namespace fabkit::fabric {

NcclChildEnv nccl_child_env(const NcclTransportChoice& choice, const std::string& ifname) {
  NcclChildEnv env;
  // The log is the evidence of which transport ran: INFO for INIT (version, bootstrap, "Using
  // network") and NET (HCAs, GID, socket interfaces). NCCL_DEBUG_FILE would divert it from our
  // pipe, NCCL_COMM_ID would replace the unique id we hand over.
  env.set["NCCL_DEBUG"] = "INFO";
  env.set["NCCL_DEBUG_SUBSYS"] = "INIT,NET";
  env.unset = {"NCCL_DEBUG_FILE", "NCCL_COMM_ID"};
  if (!choice.host_id.empty()) env.set["NCCL_HOSTID"] = choice.host_id;
  if (!ifname.empty()) {
    // '=' = exact name: a bare "eth1" would also match eth10, eth11...
    env.set["NCCL_SOCKET_IFNAME"] = "=" + ifname;
  }
  if (choice.network == "Socket") {
    env.set["NCCL_NET"] = "Socket";
    // NCCL before 2.10 has no NCCL_NET; disabling IB is how those select the socket transport.
    env.set["NCCL_IB_DISABLE"] = "1";
    env.unset.push_back("NCCL_IB_HCA");
    env.unset.push_back("NCCL_IB_GID_INDEX");
    return env;
  }
  if (choice.network != "IB" && choice.network != "RoCE")
    throw UsageError("NCCL transport network = '" + choice.network + "' is invalid: use Socket, IB or RoCE");
  if (choice.hca.empty())
    throw UsageError("NCCL transport " + choice.network + ": hca is empty: name the HCA (e.g. mlx5_0) from `fabcheck node`");
  if (choice.port < 1) throw UsageError("NCCL transport " + choice.network + ": port = " + std::to_string(choice.port) + " is invalid: HCA ports start at 1");
  // RoCE is NCCL's IB transport over an Ethernet link layer: the same NCCL_NET, plus the GID.
  env.set["NCCL_NET"] = "IB";
  env.set["NCCL_IB_DISABLE"] = "0";
  // '=' + dev:port: exactly this HCA port; without '=' "mlx5_1" would also select mlx5_10.
  env.set["NCCL_IB_HCA"] = "=" + choice.hca + ":" + std::to_string(choice.port);
  if (choice.network == "RoCE" && choice.gid_index >= 0) {
    env.set["NCCL_IB_GID_INDEX"] = std::to_string(choice.gid_index);
  } else {
    // IB needs no GID index; for RoCE, -1 leaves it to NCCL's auto-selection (2.21+).
    env.unset.push_back("NCCL_IB_GID_INDEX");
  }
  return env;
}

std::vector<std::string> merge_child_env(const std::map<std::string, std::string>& base, const NcclChildEnv& env) {
  std::map<std::string, std::string> merged = base;
  for (const auto& name : env.unset) merged.erase(name);
  for (const auto& [k, v] : env.set) merged[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : merged) out.push_back(k + "=" + v);
  return out;
}

std::string nccl_transport_label(const NcclTransportChoice& choice) {
  std::string n = choice.network;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return "nccl-" + n;
}

}  // namespace fabkit::fabric
