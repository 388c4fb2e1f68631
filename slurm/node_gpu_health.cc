#include "slurm/node_gpu_health.h"

#include <algorithm>
#include <map>

namespace fabkit::slurm {

NodeGpuHealth node_gpu_health(const Json& r, const std::vector<Finding>& findings) {
  NodeGpuHealth h;
  if (r.is_object() && r.contains("gpus") && r["gpus"].is_object()) {
    const Json& g = r["gpus"];
    if (g.contains("count") && g["count"].is_number_integer()) h.gpus = g["count"].get<int>();
    if (g.contains("driver_version") && g["driver_version"].is_string())
      h.driver_version = g["driver_version"].get<std::string>();
  }
  // Findings about one GPU name it by bus id (or "GPU N"); node-wide ones have subject "NVML".
  std::map<std::string, Severity> worst;
  for (const auto& f : findings) {
    if (f.code.rfind("gpu.", 0) != 0 || f.severity == Severity::kInfo) continue;
    if (std::find(h.codes.begin(), h.codes.end(), f.code) == h.codes.end())
      h.codes.push_back(f.code);
    if (f.subject == "NVML") continue;
    worst[f.subject] = std::max(worst[f.subject], f.severity);
  }
  for (const auto& [_, s] : worst) (s == Severity::kFail ? h.gpus_failing : h.gpus_warning)++;
  return h;
}

Json to_json(const NodeGpuHealth& h) {
  return {{"gpus", h.gpus ? Json(*h.gpus) : Json()},
          {"driver_version", h.driver_version.empty() ? Json() : Json(h.driver_version)},
          {"gpus_failing", h.gpus_failing},
          {"gpus_warning", h.gpus_warning},
          {"codes", h.codes}};
}

}  // namespace fabkit::slurm
