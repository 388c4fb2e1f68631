#include "reports/prom/prom_gpu_active.h"

#include "reports/prom/prom_fields.h"

namespace fabkit::reports::prom {

std::vector<Family> gpu_active_families(const Json& r) {
  const Json& s = member(r, "gpu_active");
  if (!s.is_object()) return {};
  Family ran{
      "fabkit_node_gpu_active_ran",
      "1 when fabcheck node --active ran every step, 0 when it was unavailable or stopped early",
      "gauge",
      {{{{"status", string_or(s, "status", "?")}},
        string_or(s, "status", "") == "ran" ? 1.0 : 0.0}}};
  Family gemm{"fabkit_node_gpu_gemm_bf16_flops",
              "bf16 GEMM throughput per GPU (cuBLAS, FLOP/s)",
              "gauge",
              {}};
  // D2D counts read + write bytes (docs/gpu-node.md); the host copies one direction each.
  Family copy{"fabkit_node_gpu_copy_bytes_per_second",
              "Copy bandwidth per GPU: d2d (device memory, read + write), h2d and d2h (pinned, "
              "alone or with every "
              "GPU copying at once)",
              "gauge",
              {}};
  Family frac{
      "fabkit_node_gpu_active_fraction",
      "Measured / expected per GPU and figure (docs/gpu-node.md, the expected-performance model)",
      "gauge",
      {}};
  const Json& gpus = member(s, "gpus");
  if (!gpus.is_null() && !gpus.is_array())
    throw std::invalid_argument("gpu_active.gpus must be an array");
  for (size_t i = 0; gpus.is_array() && i < gpus.size(); ++i) {
    std::string w = "gpu_active.gpus[" + std::to_string(i) + "]";
    auto index = number(gpus[i], "index", w);
    Labels gl = {{"gpu", index ? format_value(*index) : "?"},
                 {"bus_id", string_or(gpus[i], "bus_id", "?")}};
    const Json& figs = member(gpus[i], "figures");
    for (size_t k = 0; figs.is_array() && k < figs.size(); ++k) {
      std::string fw = w + ".figures[" + std::to_string(k) + "]";
      std::string name = string_or(figs[k], "name", "?");
      if (auto f = number(figs[k], "fraction", fw)) {
        Labels l = gl;
        l.push_back({"figure", name});
        frac.samples.push_back({l, *f});
      }
      auto v = number(figs[k], "measured", fw);
      if (!v) continue;
      if (name == "gemm_bf16") {
        gemm.samples.push_back({gl, *v * 1e12});
        continue;
      }
      Labels l = gl;
      bool concurrent = name.find("_concurrent") != std::string::npos;
      l.push_back({"direction", name == "device_copy" ? "d2d" : name.substr(0, 3)});
      l.push_back({"mode", concurrent ? "concurrent" : "alone"});
      copy.samples.push_back({l, *v * 1e9});
    }
  }
  Family bus{"fabkit_node_gpu_allreduce_busbw_bytes_per_second",
             "Intra-node NCCL all-reduce bus bandwidth (slowest rank) per algorithm",
             "gauge",
             {}};
  Family bus_frac{"fabkit_node_gpu_allreduce_fraction",
                  "Intra-node all-reduce busbw / expected per algorithm",
                  "gauge",
                  {}};
  const Json& runs = member(s, "allreduce");
  for (size_t i = 0; runs.is_array() && i < runs.size(); ++i) {
    std::string w = "gpu_active.allreduce[" + std::to_string(i) + "]";
    auto ranks = number(runs[i], "ranks", w);
    Labels l = {{"algorithm", string_or(runs[i], "algorithm", "?")},
                {"ranks", ranks ? format_value(*ranks) : "?"}};
    if (auto v = number(runs[i], "busbw_gb_per_s", w)) bus.samples.push_back({l, *v * 1e9});
    if (auto f = number(runs[i], "fraction", w)) bus_frac.samples.push_back({l, *f});
  }
  return {ran, gemm, copy, frac, bus, bus_frac};
}

}  // namespace fabkit::reports::prom
