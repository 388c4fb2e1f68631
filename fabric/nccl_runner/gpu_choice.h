// Which GPU an NCCL rank should use: the NVIDIA GPU nearest (NCCL path level, then PCI hops) to
// the NIC under test — the HCA for IB/RoCE, the socket interface's PCI device for Socket — from
// the same topology model `fabcheck node` reports (hwloc, GPUs by PCI identity, no GPU runtime).
// The child resolves the bus id to a CUDA index (cudaDeviceGetByPCIBusId, which honours
// CUDA_VISIBLE_DEVICES and CUDA's device order); with no pick it falls back to LOCAL_RANK.
#pragma once

#include <string>

#include "common/json.h"
#include "topo/topology.h"

namespace fabkit::fabric {

struct GpuPick {
  std::string bus_id;     // "" = no pick (reason says why): the child falls back to LOCAL_RANK
  std::string nic;        // the NIC matched ("mlx5_0", "eth1")
  std::string level;      // NCCL path level GPU<->NIC ("PIX", "SYS"...)
  int equally_near = 0;   // other GPUs at the same level and hop count (the first is taken)
  std::string reason;
};

// Pure. hca: the HCA under test ("" for Socket); ifname: the socket interface ("" = unknown).
GpuPick pick_gpu_near_nic(const topo::Topology& t, const std::string& hca, const std::string& ifname);
// The same on this machine's live topology; an hwloc failure is a reason, not an error.
GpuPick pick_gpu_here(const std::string& hca, const std::string& ifname);
Json to_json(const GpuPick& p);

}  // namespace fabkit::fabric
