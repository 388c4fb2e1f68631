// PCIe link vocabulary shared by every reader of a link (sysfs current/max_link_speed, NVML's
// generation and width, NCCL topology XML `link_speed`) and by the expected-performance model:
// the generation a transfer rate means and the data bandwidth a generation and width carry.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fabkit::topo {

// One end of a link as trained or as capable: generation 1..6 and lanes. Either may be unknown.
struct PcieLink {
  std::optional<int> generation;  // 1..6
  std::optional<int> width;       // lanes: 1, 2, 4, 8, 16, 32
};

// sysfs `current_link_speed` / `max_link_speed` and NCCL's `link_speed` attribute → generation.
// Kernels write "32.0 GT/s PCIe" (since 4.18), older ones "8 GT/s" or "5.0 GT/s"; a link that is
// down or a virtual function reads "Unknown speed" or "Unknown". nullopt for anything that is not
// one of the six rates (2.5, 5, 8, 16, 32, 64 GT/s).
std::optional<int> pcie_generation_from_speed(std::string_view text);
// sysfs `current_link_width` / `max_link_width` ("16"; "0" when the link is down) → lanes.
// nullopt when not a positive lane count the spec allows.
std::optional<int> pcie_width_from_text(std::string_view text);

// The transfer rate of a generation in GT/s (2.5 … 64); 0 for an unknown generation.
double pcie_transfer_rate_gts(int generation);
// Data bandwidth of one direction in Gbit/s after line encoding: 8b/10b for Gen1–2,
// 128b/130b for Gen3–5, and for Gen6 the FLIT mode's 242 data bytes of every 256 (PCIe 6.0
// spec, 4.2.3.1). It ignores TLP/DLLP overhead, so measured copies reach ~80-90% of it.
// 0 when the generation is unknown or width is not positive.
double pcie_data_rate_gbps(int generation, int width);

// "Gen5 x16"; "Gen? x16" / "Gen5 x?" for the unknown half.
std::string to_string(const PcieLink& link);

}  // namespace fabkit::topo
