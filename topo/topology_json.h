// JSON form of a topology model (docs/json/topo.md): used by `fabcheck topo --json` and by the
// topo_file and locality sections of `fabcheck node --json`.
#pragma once

#include "common/json.h"
#include "topo/topology.h"

namespace fabkit::topo {

// {source, numa_nodes[], gpus[] (with nearest_nic, path_level, numa_node), nics[], pci_nodes}
Json to_json(const Topology& t);
// A GPU's equally_near list holds at most this many NICs; the rest are counted in
// equally_near_left_out. Every NIC ties on a node with all NICs behind the CPU, so the list grows
// with GPUs x NICs (421 MB for a 4000 x 4000 file, issue #36); a real node has at most ~18 NICs.
inline constexpr size_t kMaxEquallyNearListed = 64;
Json gpu_to_json(const Topology& t, const Gpu& g);  // one GPU with its nearest NIC
Json nic_to_json(const Topology& t, const Nic& n);
std::string nic_label(const Nic& n);  // "mlx5_0" / "mlx5_0,mlx5_1" / the bus id when unnamed

}  // namespace fabkit::topo
