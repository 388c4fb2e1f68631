#include "profile/profile_model.h"

#include <algorithm>

namespace fabkit::profile {

const char* to_string(Basis b) {
  switch (b) {
    case Basis::kMeasured: return "measured";
    case Basis::kInferred: return "inferred";
    case Basis::kUnmeasured: return "unmeasured";
  }
  return "inferred";
}

std::optional<Basis> basis_from_string(const std::string& s) {
  if (s == "measured") return Basis::kMeasured;
  if (s == "inferred") return Basis::kInferred;
  if (s == "unmeasured") return Basis::kUnmeasured;
  return std::nullopt;
}

const std::vector<std::string>& known_variables() {
  static const std::vector<std::string> kVars = {"NCCL_SOCKET_IFNAME",
                                                 "GLOO_SOCKET_IFNAME",
                                                 "NCCL_IB_DISABLE",
                                                 "NCCL_IB_HCA",
                                                 "NCCL_IB_GID_INDEX",
                                                 "NCCL_IB_TC",
                                                 "NCCL_IB_SL",
                                                 "NCCL_NET_GDR_LEVEL",
                                                 "NCCL_TOPO_FILE",
                                                 "NCCL_IB_TIMEOUT",
                                                 "NCCL_IB_RETRY_CNT",
                                                 "TORCH_NCCL_ASYNC_ERROR_HANDLING",
                                                 "MASTER_PORT",
                                                 // libfabric's EFA provider (docs/efa.md)
                                                 "FI_PROVIDER",
                                                 "FI_EFA_USE_DEVICE_RDMA",
                                                 "FI_EFA_FORK_SAFE",
                                                 "FI_EFA_USE_HUGE_PAGE",
                                                 "FI_EFA_SET_CUDA_SYNC_MEMOPS"};
  return kVars;
}

bool is_known_variable(const std::string& name) {
  const auto& v = known_variables();
  return std::find(v.begin(), v.end(), name) != v.end();
}

}  // namespace fabkit::profile
