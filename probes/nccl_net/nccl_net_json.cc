// The `nccl_net_plugin` section (docs/json/net.md). `version` is the plugin's version
// text ("" when none would load or its file does not say): `validate` compares it between nodes.
#include "probes/nccl_net/nccl_net_facts.h"

namespace fabkit::probes {
namespace {

Json opt(const std::optional<std::string>& v) { return v ? Json(*v) : Json(nullptr); }

Json library_json(const std::optional<LibraryFile>& f) {
  if (!f) return Json(nullptr);
  return Json{{"path", f->path},
              {"kind", f->kind},
              {"version", f->version},
              {"machine", f->elf.machine},
              {"net_api_versions", f->elf.net_api_versions},
              {"collnet_api_versions", f->elf.collnet_api_versions},
              {"version_texts", f->elf.rodata_versions},
              {"error", opt(f->elf.error)},
              {"distrust", opt(f->distrust)}};
}

}  // namespace

Json to_json(const NcclNetFacts& f) {
  Json j;
  j["version"] = f.plugin ? f.plugin->version : std::string();
  j["requested"] = opt(f.requested);
  j["requested_source"] = f.requested ? Json(f.requested_source) : Json(nullptr);
  j["disabled"] = f.disabled;
  j["nccl_net"] = opt(f.nccl_net);
  j["candidates"] = Json::array();
  for (const auto& c : f.candidates)
    j["candidates"].push_back({{"name", c.name}, {"path", opt(c.path)}});
  j["plugin"] = library_json(f.plugin);
  j["nccl"] = library_json(f.nccl);
  j["search_dirs"] = Json::array();
  for (const auto& d : f.search_dirs)
    j["search_dirs"].push_back({{"dir", d.dir}, {"from", d.from}});
  j["search_issues"] = f.search_issues;
  j["trust_checked"] = f.trust_checked;
  j["dmi_vendor"] = f.dmi_vendor;
  j["dmi_product"] = f.dmi_product;
  j["gcp_settings"] = Json::object();
  for (const auto& [k, v] : f.gcp_settings) j["gcp_settings"][k] = v;
  j["unix_client_prefix_exists"] =
      f.unix_client_prefix_exists ? Json(*f.unix_client_prefix_exists) : Json(nullptr);
  return j;
}

}  // namespace fabkit::probes
