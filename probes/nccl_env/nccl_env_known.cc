// The variables NCCL reads. Sources: NCCL's documentation (docs.nvidia.com/deeplearning/nccl
// user-guide/docs/env.html, 2.3 through 2.28) and the NCCL_* strings of libnccl.so 2.28, minus
// the debug-subsystem names that are not variables (NCCL_INIT, NCCL_COLL, ...). Names that
// older releases read are kept: an old NCCL on the cluster still honours them.
// Integer variables go through strtoll(str, NULL, 0) in ncclLoadParam (src/misc/param.cc).
#include <algorithm>
#include <cstring>

#include "probes/nccl_env/nccl_env_facts.h"

namespace fabkit::probes {
namespace {

using K = NcclValueKind;

const NcclKnownVar kKnown[] = {
    {"NCCL_ALGO", K::kString, ""},
    {"NCCL_ALLOC_P2P_NET_LL_BUFFERS", K::kBool01, ""},
    {"NCCL_ASYNC_ERROR_HANDLING", K::kInt, ""},  // PyTorch < 2.2 name
    {"NCCL_BLOCKING_WAIT", K::kBool01, ""},      // PyTorch < 2.2 name
    {"NCCL_BUFFSIZE", K::kInt, ""},
    {"NCCL_CGA_CLUSTER_SIZE", K::kInt, ""},
    {"NCCL_CHECKS_DISABLE", K::kBool01, ""},
    {"NCCL_CHECK_POINTERS", K::kBool01, ""},
    {"NCCL_CHUNK_SIZE", K::kInt, ""},
    {"NCCL_COLLNET_ENABLE", K::kBool01, ""},
    {"NCCL_COLLNET_NODE_THRESHOLD", K::kInt, ""},
    {"NCCL_COMM_BLOCKING", K::kBool01, ""},
    {"NCCL_COMM_ID", K::kString, ""},
    {"NCCL_COMM_SHRINK_SHARE_RESOURCES", K::kBool01, ""},
    {"NCCL_COMM_SPLIT_SHARE_RESOURCES", K::kBool01, ""},
    {"NCCL_CONF_FILE", K::kString, ""},
    {"NCCL_CONNECT_ROUND_MAX_PEERS", K::kInt, ""},
    {"NCCL_CREATE_THREAD_CONTEXT", K::kBool01, ""},
    {"NCCL_CROSS_NIC", K::kInt, ""},
    {"NCCL_CTA_POLICY", K::kString, ""},
    {"NCCL_CUMEM_ENABLE", K::kBool01, ""},
    {"NCCL_CUMEM_HOST_ENABLE", K::kBool01, ""},
    {"NCCL_DEBUG", K::kEnum, "VERSION|WARN|INFO|TRACE|ABORT"},
    {"NCCL_DEBUG_FILE", K::kString, ""},
    {"NCCL_DEBUG_SUBSYS", K::kString, ""},
    {"NCCL_DEBUG_TIMESTAMP_FORMAT", K::kString, ""},
    {"NCCL_DEBUG_TIMESTAMP_LEVELS", K::kString, ""},
    {"NCCL_DESYNC_DEBUG", K::kBool01, ""},  // PyTorch < 2.2 name
    {"NCCL_DEVICE_UNPACK", K::kBool01, ""},
    {"NCCL_DMABUF_ENABLE", K::kBool01, ""},
    {"NCCL_ENABLE_TIMING", K::kBool01, ""},  // PyTorch
    {"NCCL_ENV_PLUGIN", K::kString, ""},
    {"NCCL_GDRCOPY_ENABLE", K::kBool01, ""},
    {"NCCL_GDRCOPY_FIFO_ENABLE", K::kBool01, ""},
    {"NCCL_GDRCOPY_FLUSH_ENABLE", K::kBool01, ""},
    {"NCCL_GDRCOPY_SYNC_ENABLE", K::kBool01, ""},
    {"NCCL_GDR_FLUSH_DISABLE", K::kBool01, ""},
    {"NCCL_GIN_ENABLE", K::kBool01, ""},
    {"NCCL_GIN_TYPE", K::kInt, ""},
    {"NCCL_GRAPH_DUMP_FILE", K::kString, ""},
    {"NCCL_GRAPH_DUMP_FILE_RANK", K::kInt, ""},
    {"NCCL_GRAPH_FILE", K::kString, ""},
    {"NCCL_GRAPH_HELPER_DISABLE", K::kBool01, ""},
    {"NCCL_GRAPH_MIXING_SUPPORT", K::kBool01, ""},
    {"NCCL_GRAPH_REGISTER", K::kBool01, ""},
    {"NCCL_GROUP_CUDA_STREAM", K::kBool01, ""},
    {"NCCL_HOSTID", K::kString, ""},
    {"NCCL_IB_ADAPTIVE_ROUTING", K::kBool01, ""},
    {"NCCL_IB_ADDR_FAMILY", K::kEnum, "AF_INET|AF_INET6"},
    {"NCCL_IB_ADDR_RANGE", K::kString, ""},
    {"NCCL_IB_AR_THRESHOLD", K::kInt, ""},
    {"NCCL_IB_CUDA_SUPPORT", K::kBool01, ""},  // before 2.4.7; replaced by NCCL_NET_GDR_LEVEL
    {"NCCL_IB_DATA_DIRECT", K::kBool01, ""},
    {"NCCL_IB_DISABLE", K::kBool01, ""},
    {"NCCL_IB_ECE_ENABLE", K::kBool01, ""},
    {"NCCL_IB_FIFO_TC", K::kInt, ""},
    {"NCCL_IB_GDR_LEVEL", K::kString, ""},  // old name of NCCL_NET_GDR_LEVEL
    {"NCCL_IB_GID_INDEX", K::kInt, ""},
    {"NCCL_IB_HCA", K::kString, ""},
    {"NCCL_IB_MERGE_NICS", K::kBool01, ""},
    {"NCCL_IB_MERGE_VFS", K::kBool01, ""},
    {"NCCL_IB_MQP_RETRY_ALL", K::kBool01, ""},
    {"NCCL_IB_MQP_RETRY_CNT", K::kInt, ""},
    {"NCCL_IB_MQP_RETRY_SLEEP_MSEC", K::kInt, ""},
    {"NCCL_IB_PCI_RELAXED_ORDERING", K::kInt, ""},
    {"NCCL_IB_PKEY", K::kInt, ""},
    {"NCCL_IB_QPS_PER_CONNECTION", K::kInt, ""},
    {"NCCL_IB_RETRY_CNT", K::kInt, ""},
    {"NCCL_IB_RETURN_ASYNC_EVENTS", K::kBool01, ""},
    {"NCCL_IB_ROCE_VERSION_NUM", K::kInt, ""},
    {"NCCL_IB_ROUTABLE_FLID_GID_INDEX", K::kInt, ""},
    {"NCCL_IB_SL", K::kInt, ""},
    {"NCCL_IB_SPLIT_DATA_ON_QPS", K::kBool01, ""},
    {"NCCL_IB_TC", K::kInt, ""},
    {"NCCL_IB_TIMEOUT", K::kInt, ""},
    {"NCCL_IB_USE_INLINE", K::kBool01, ""},
    {"NCCL_IB_WARN_RAIL_LOCAL", K::kBool01, ""},
    {"NCCL_IGNORE_CPU_AFFINITY", K::kBool01, ""},
    {"NCCL_IGNORE_DISABLED_P2P", K::kBool01, ""},
    {"NCCL_L1_SHARED_MEMORY_CARVEOUT", K::kInt, ""},
    {"NCCL_LAUNCH_MODE", K::kEnum, "PARALLEL|GROUP"},
    {"NCCL_LAUNCH_ORDER_IMPLICIT", K::kBool01, ""},
    {"NCCL_LAUNCH_RACE_FATAL", K::kBool01, ""},
    {"NCCL_LEGACY_CUDA_REGISTER", K::kBool01, ""},
    {"NCCL_LL128_BUFFSIZE", K::kInt, ""},
    {"NCCL_LL128_C2C", K::kBool01, ""},
    {"NCCL_LL128_NTHREADS", K::kInt, ""},
    {"NCCL_LL_BUFFSIZE", K::kInt, ""},
    {"NCCL_LL_THRESHOLD", K::kInt, ""},  // before 2.5
    {"NCCL_LOCAL_REGISTER", K::kBool01, ""},
    {"NCCL_MAX_CGA_CLUSTER_SIZE", K::kInt, ""},
    {"NCCL_MAX_CTAS", K::kInt, ""},
    {"NCCL_MAX_NCHANNELS", K::kInt, ""},
    {"NCCL_MAX_NRINGS", K::kInt, ""},
    {"NCCL_MAX_P2P_NCHANNELS", K::kInt, ""},
    {"NCCL_MEM_SYNC_DOMAIN", K::kInt, ""},
    {"NCCL_MIN_CTAS", K::kInt, ""},
    {"NCCL_MIN_NCHANNELS", K::kInt, ""},
    {"NCCL_MIN_NRINGS", K::kInt, ""},
    {"NCCL_MIN_P2P_NCHANNELS", K::kInt, ""},
    {"NCCL_MNNVL_CLIQUE_ID", K::kInt, ""},
    {"NCCL_MNNVL_ENABLE", K::kInt, ""},
    {"NCCL_MNNVL_UUID", K::kString, ""},
    {"NCCL_NCHANNELS_PER_NET_PEER", K::kInt, ""},
    {"NCCL_NET", K::kString, ""},
    {"NCCL_NETDEVS_POLICY", K::kString, ""},
    {"NCCL_NET_DISABLE_INTRA", K::kBool01, ""},
    {"NCCL_NET_FORCE_FLUSH", K::kBool01, ""},
    {"NCCL_NET_FORCE_MERGE", K::kString, ""},
    {"NCCL_NET_GDR_C2C", K::kBool01, ""},
    {"NCCL_NET_GDR_LEVEL", K::kString, ""},
    {"NCCL_NET_GDR_READ", K::kBool01, ""},
    {"NCCL_NET_MERGE_LEVEL", K::kString, ""},
    {"NCCL_NET_OVERHEAD", K::kInt, ""},
    {"NCCL_NET_PLUGIN", K::kString, ""},
    {"NCCL_NET_SHARED_BUFFERS", K::kBool01, ""},
    {"NCCL_NET_SHARED_COMMS", K::kBool01, ""},
    {"NCCL_NSOCKS_PERTHREAD", K::kInt, ""},
    {"NCCL_NTHREADS", K::kInt, ""},
    {"NCCL_NVB_DISABLE", K::kBool01, ""},
    {"NCCL_NVB_PRECONNECT", K::kBool01, ""},
    {"NCCL_NVLS_CHUNKSIZE", K::kInt, ""},
    {"NCCL_NVLS_ENABLE", K::kInt, ""},
    {"NCCL_NVLS_NCHANNELS", K::kInt, ""},
    {"NCCL_NVTX_DISABLE", K::kBool01, ""},
    {"NCCL_OOB_NET_ENABLE", K::kBool01, ""},
    {"NCCL_OOB_NET_IFNAME", K::kString, ""},
    {"NCCL_P2P_DIRECT_DISABLE", K::kBool01, ""},
    {"NCCL_P2P_DISABLE", K::kBool01, ""},
    {"NCCL_P2P_LEVEL", K::kString, ""},
    {"NCCL_P2P_LL_THRESHOLD", K::kInt, ""},
    {"NCCL_P2P_NET_CHUNKSIZE", K::kInt, ""},
    {"NCCL_P2P_NVL_CHUNKSIZE", K::kInt, ""},
    {"NCCL_P2P_PCI_CHUNKSIZE", K::kInt, ""},
    {"NCCL_P2P_PXN_LEVEL", K::kInt, ""},
    {"NCCL_P2P_READ_ENABLE", K::kBool01, ""},
    {"NCCL_P2P_USE_CUDA_MEMCPY", K::kBool01, ""},
    {"NCCL_PAT_ENABLE", K::kBool01, ""},
    {"NCCL_PROFILER_PLUGIN", K::kString, ""},
    {"NCCL_PROTO", K::kString, ""},
    {"NCCL_PROXY_APPEND_BATCH_SIZE", K::kInt, ""},
    {"NCCL_PROXY_CPUSET", K::kString, ""},
    {"NCCL_PROXY_DUMP_SIGNAL", K::kInt, ""},
    {"NCCL_PXN_C2C", K::kBool01, ""},
    {"NCCL_PXN_DISABLE", K::kBool01, ""},
    {"NCCL_RAS_ADDR", K::kString, ""},
    {"NCCL_RAS_ENABLE", K::kBool01, ""},
    {"NCCL_RAS_TIMEOUT_FACTOR", K::kInt, ""},
    {"NCCL_REPORT_CONNECT_PROGRESS", K::kBool01, ""},
    {"NCCL_RINGS", K::kString, ""},  // before 2.4
    {"NCCL_RUNTIME_CONNECT", K::kBool01, ""},
    {"NCCL_SET_CPU_STACK_SIZE", K::kBool01, ""},
    {"NCCL_SET_STACK_SIZE", K::kBool01, ""},
    {"NCCL_SET_THREAD_NAME", K::kBool01, ""},
    {"NCCL_SHM_DISABLE", K::kBool01, ""},
    {"NCCL_SHM_LOCALITY", K::kInt, ""},
    {"NCCL_SHM_MEMCPY_MODE", K::kInt, ""},
    {"NCCL_SHM_USE_CUDA_MEMCPY", K::kBool01, ""},
    {"NCCL_SINGLE_PROC_MEM_REG_ENABLE", K::kBool01, ""},
    {"NCCL_SINGLE_RING_THRESHOLD", K::kInt, ""},  // before 2.5
    {"NCCL_SOCKET_FAMILY", K::kEnum, "AF_INET|AF_INET6"},
    {"NCCL_SOCKET_IFNAME", K::kString, ""},
    {"NCCL_SOCKET_INLINE", K::kInt, ""},
    {"NCCL_SOCKET_MIN_TASKSIZE", K::kInt, ""},
    {"NCCL_SOCKET_NTHREADS", K::kInt, ""},
    {"NCCL_SOCKET_RCVBUF", K::kInt, ""},
    {"NCCL_SOCKET_RETRY_CNT", K::kInt, ""},
    {"NCCL_SOCKET_RETRY_SLEEP_MSEC", K::kInt, ""},
    {"NCCL_SOCKET_SNDBUF", K::kInt, ""},
    {"NCCL_SYM_CTAS", K::kInt, ""},
    {"NCCL_SYM_KERNEL", K::kString, ""},
    {"NCCL_THREAD_THRESHOLDS", K::kString, ""},
    {"NCCL_TOPO_DUMP_FILE", K::kString, ""},
    {"NCCL_TOPO_DUMP_FILE_RANK", K::kInt, ""},
    {"NCCL_TOPO_FILE", K::kString, ""},
    {"NCCL_TREE_THRESHOLD", K::kInt, ""},  // 2.4
    {"NCCL_TUNER_PLUGIN", K::kString, ""},
    {"NCCL_UID_STAGGER_RATE", K::kInt, ""},
    {"NCCL_UID_STAGGER_THRESHOLD", K::kInt, ""},
    {"NCCL_UNPACK_DOUBLE_NCHANNELS", K::kBool01, ""},
    {"NCCL_WARN_ENABLE_DEBUG_INFO", K::kBool01, ""},
    {"NCCL_WIN_ENABLE", K::kBool01, ""},
    {"NCCL_WORK_ARGS_BYTES", K::kInt, ""},
    {"NCCL_WORK_FIFO_BYTES", K::kInt, ""},
    {"NCCL_WORK_FIFO_DEPTH", K::kInt, ""},
};

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

const NcclKnownVar* find_known_nccl_var(const std::string& name) {
  for (const auto& k : kKnown)
    if (name == k.name) return &k;
  return nullptr;
}

std::string closest_known_nccl_var(const std::string& name) {
  std::string best;
  size_t best_d = 3;
  for (const auto& k : kKnown) {
    size_t d = edit_distance(name, k.name);
    if (d < best_d) {
      best_d = d;
      best = k.name;
    }
  }
  return best;
}

}  // namespace fabkit::probes
