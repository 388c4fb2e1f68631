// Shared by the GPU judges (gpu_judge.cc, gpu_health_judge.cc, gpu_link_judge.cc,
// gpu_memory_counts_judge.cc): how a GPU is
// named in findings. Internal to probes/gpu.
#pragma once

#include <string>
#include <vector>

#include "probes/gpu/gpu_facts.h"

namespace fabkit::probes::gpu_detail {

// The finding subject: the PCI bus id (what sysfs, lspci and the locality section use), or
// "GPU N" when NVML could not say.
inline std::string subject_of(const GpuDevice& d) {
  return d.bus_id.empty() ? "GPU " + std::to_string(d.index) : d.bus_id;
}
// "GPU 3" as messages start.
inline std::string gpu_name(const GpuDevice& d) { return "GPU " + std::to_string(d.index); }
inline std::string index_text(const GpuDevice& d) { return std::to_string(d.index); }

// Memory findings by count (gpu_memory_counts_judge.cc): spare rows and retirement table spent,
// SRAM and DRAM ECC counts past the peers' limits.
void judge_memory_counts(const GpuDevice& d, std::vector<Finding>& out);

// NVLink and fabric findings of every GPU (gpu_link_judge.cc): they compare GPUs of one node.
void judge_links(const GpuFacts& f, std::vector<Finding>& out);

}  // namespace fabkit::probes::gpu_detail
