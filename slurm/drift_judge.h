// Configuration drift between nodes of one cluster: the settings a job assumes are the same on
// every node (NCCL version, HCA firmware, MTU, the RoCE GID layout, memlock). Pure: per-node
// key/value facts in (extracted from `fabcheck node --json` reports and pair reports), findings
// out. The value most nodes agree on is the expected one; each node that differs gets a finding.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"

namespace fabkit::slurm {

// key -> value, keys "<kind>:<object>" where kind decides the finding code:
//   nccl_version            -> cluster.drift_nccl_version
//   memlock_soft            -> cluster.drift_memlock
//   hcas                    -> cluster.drift_hcas      (the sorted device names, or "(none)")
//   fw_ver:<hca>            -> cluster.drift_firmware
//   mtu:<ifname>            -> cluster.drift_mtu
//   gid_v2_index:<hca>:<p>  -> cluster.drift_gid   (NCCL_IB_GID_INDEX is one value per job)
//   gid_types:<hca>:<p>     -> cluster.drift_gid
//   gpu_driver              -> cluster.drift_gpu_driver   (the NVIDIA driver version)
//   gpu_vbios:<model>       -> cluster.drift_gpu_vbios    (the VBIOS versions of that model's GPUs)
//   gpu_inforom:<model>     -> cluster.drift_gpu_inforom  (their InfoROM image versions)
//   roce_pfc:<hca>:<p>, roce_trust:<hca>:<p>, roce_nccl_priority:<hca>:<p>, roce_ecn:<hca>:<p>
//                           -> cluster.drift_roce_qos (PFC priorities, trust mode, the priority
//                              NCCL's traffic lands on, ECN np/rp on it)
//   ib_sl2vl:<hca>:<p>, ib_oper_vls:<hca>:<p>, ib_nccl_vl:<hca>:<p>, ib_path_sl:<hca>:<p>
//                           -> cluster.drift_ib_qos (the SM-programmed SL-to-VL table,
//                              OperationalVLs, the VL NCCL's SL reaches, the PathRecord SL)
struct NodeDriftFacts {
  std::string host;
  std::map<std::string, std::string> values;
};

// From one node report (kind "node"): memlock soft limit, the set of HCAs, every HCA's fw_ver (the
// NIC firmware), the MTU of every running interface that is not loopback, per HCA port the RoCE
// v2 GID index and the GID types by index, and the GPU driver/VBIOS/InfoROM versions. Absent or
// null fields give no key (unknown is not a difference).
std::map<std::string, std::string> drift_facts_from_node_report(const Json& report);

// The GPU keys (gpu_drift.cc) from the report's `gpus` section: the driver version, and per GPU
// model the sorted distinct VBIOS and InfoROM image versions of its GPUs ("a, b" when one node
// mixes two).
void add_gpu_drift_facts(const Json& report, std::map<std::string, std::string>& out);
// The RoCE QoS keys (roce_qos_drift.cc) from the report's `roce_qos` section; a port whose DCB was
// not read gives no PFC key (unknown is not a difference).
void add_roce_qos_drift_facts(const Json& report, std::map<std::string, std::string>& out);
// The IB QoS keys (ib_qos_drift.cc) from the report's `ib_qos` section; a port whose MADs were not
// answered gives no key.
void add_ib_qos_drift_facts(const Json& report, std::map<std::string, std::string>& out);

std::vector<Finding> judge_drift(const std::vector<NodeDriftFacts>& nodes);

}  // namespace fabkit::slurm
