// The GPU side of cluster drift: the NVIDIA driver, and per GPU model the VBIOS and InfoROM image
// versions, from a node report's `gpus` section (docs/json/gpus.md). Keyed by model so a cluster
// of two GPU generations compares each with its own kind.
#include <set>

#include "slurm/drift_judge.h"

namespace fabkit::slurm {
namespace {

std::string text(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

std::string joined(const std::set<std::string>& values) {
  std::string s;
  for (const auto& v : values) s += (s.empty() ? "" : ", ") + v;
  return s;
}

}  // namespace

void add_gpu_drift_facts(const Json& r, std::map<std::string, std::string>& out) {
  if (!r.is_object() || !r.contains("gpus") || !r["gpus"].is_object()) return;
  const Json& g = r["gpus"];
  if (std::string v = text(g, "driver_version"); !v.empty()) out["gpu_driver"] = v;
  if (!g.contains("devices") || !g["devices"].is_array()) return;
  std::map<std::string, std::set<std::string>> vbios, inforom;  // model -> versions
  for (const auto& d : g["devices"]) {
    std::string model = text(d, "name");
    if (model.empty() || !d.contains("health") || !d["health"].is_object()) continue;
    if (std::string v = text(d["health"], "vbios_version"); !v.empty()) vbios[model].insert(v);
    if (std::string v = text(d["health"], "inforom_image_version"); !v.empty())
      inforom[model].insert(v);
  }
  for (const auto& [model, vs] : vbios) out["gpu_vbios:" + model] = joined(vs);
  for (const auto& [model, vs] : inforom) out["gpu_inforom:" + model] = joined(vs);
}

}  // namespace fabkit::slurm
