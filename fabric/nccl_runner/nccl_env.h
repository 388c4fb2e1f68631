// Which NCCL transport a run asks for, and the child environment that asks for it (pure, tested).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fabkit::fabric {

struct NcclTransportChoice {
  std::string network;  // "Socket" | "IB" | "RoCE"
  std::string hca;      // "mlx5_0" (IB, RoCE)
  int port = 1;         // HCA port (IB, RoCE)
  int gid_index = -1;   // RoCE: the node probe's RoCE v2 GID index; -1 = NCCL's own choice (>= 2.21)
  std::string runner_path;  // "" = FABKIT_NCCL_RUNNER, beside this executable, then the build tree
  int device = -1;          // CUDA device for the child; -1 = the GPU nearest the NIC (gpu_choice.h)
  // NCCL_HOSTID for the child: ranks on one machine that must count as two hosts (network-namespace
  // hosts sharing a GPU; NCCL rejects two ranks on one GPU of one host). "" = NCCL's own host hash.
  std::string host_id;
};

struct NcclChildEnv {
  std::map<std::string, std::string> set;
  std::vector<std::string> unset;
};

// The variables that pin NCCL to `choice` on interface `ifname`, plus what must not leak in from
// the caller's environment. Throws UsageError naming the field for an unknown network or a
// missing HCA.
NcclChildEnv nccl_child_env(const NcclTransportChoice& choice, const std::string& ifname);

// base (the caller's environment) with env applied: "NAME=value" strings for execve.
std::vector<std::string> merge_child_env(const std::map<std::string, std::string>& base, const NcclChildEnv& env);

// "nccl-socket" | "nccl-ib" | "nccl-roce"
std::string nccl_transport_label(const NcclTransportChoice& choice);

}  // namespace fabkit::fabric
