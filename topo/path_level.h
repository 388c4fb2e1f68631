// Path levels between two devices, with NCCL's names and order (src/graph/topo.h, NCCL 2.28:
// LOC < NVL < NVB < C2C < PIX < PXB < P2C < PXN < PHB < SYS < NET < DIS), so users can
// cross-reference NCCL_DEBUG=INFO lines, NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL values and
// `nvidia-smi topo -m`. Lower is closer.
#pragma once

#include <optional>
#include <string>

namespace fabkit::topo {

enum class PathLevel {
  kLoc = 0,  // the same device
  kNvl,      // NVLink
  kNvb,      // NVLink through an intermediate GPU
  kC2c,      // chip-to-chip (Grace-Hopper CPU-GPU)
  kPix,      // at most one PCIe bridge (same switch)
  kPxb,      // several PCIe bridges, no host bridge
  kP2c,      // GPU-NIC through C2C then PCIe
  kPxn,      // GPU-NIC through an intermediate GPU (NVLink)
  kPhb,      // through a PCIe host bridge (the CPU), same NUMA node
  kSys,      // across the SMP interconnect between NUMA nodes (QPI/UPI/xGMI)
  kNet,      // through the network
  kDis,      // disconnected
};

const char* to_string(PathLevel level);
std::optional<PathLevel> path_level_from_string(const std::string& name);  // "PIX" -> kPix

}  // namespace fabkit::topo
