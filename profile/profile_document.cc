#include "profile/profile_document.h"

#include "profile/content_hash.h"

namespace fabkit::profile {
using namespace profile;  // the model's types: this file renders nothing else
namespace {

Json opt(const std::optional<std::string>& s) { return s ? Json(*s) : Json(nullptr); }

Json setting_json(const Setting& s) {
  Json j;
  j["value"] = opt(s.value);
  j["basis"] = to_string(s.basis);
  j["reason"] = s.reason;
  j["evidence"] = s.evidence;
  return j;
}

Json settings_json(const std::map<std::string, Setting>& settings) {
  Json j = Json::object();
  // Emission order, not alphabetical, so the file reads like the env it produces.
  for (const auto& name : known_variables()) {
    auto it = settings.find(name);
    if (it != settings.end()) j[name] = setting_json(it->second);
  }
  return j;
}

Json node_json(const NodeEntry& n) {
  Json j;
  j["hostname"] = n.hostname;
  j["interface"] = opt(n.interface);
  Json hcas = Json::array();
  for (const auto& h : n.hcas) {
    hcas.push_back(
        {{"device", h.device},
         {"port", h.port},
         {"link_layer", h.link_layer},
         {"rate_gbps", h.rate_gbps ? Json(*h.rate_gbps) : Json(nullptr)},
         {"roce_v2_gid_index", h.roce_v2_gid_index ? Json(*h.roce_v2_gid_index) : Json(nullptr)}});
  }
  j["hcas"] = hcas;
  j["gpu_count"] = n.gpu_count;
  Json loc = Json::array();
  for (const auto& g : n.locality)
    loc.push_back({{"gpu_bus_id", g.gpu_bus_id},
                   {"nearest_nic", opt(g.nearest_nic)},
                   {"path_level", opt(g.path_level)}});
  j["locality"] = loc;
  j["topo_file"] = opt(n.topo_file);
  // Written only when known, so profiles of nodes without EFA read as before.
  if (n.efa_devices) j["efa_devices"] = *n.efa_devices;
  if (n.instance_type) j["instance_type"] = *n.instance_type;
  if (n.libfabric_version) j["libfabric_version"] = *n.libfabric_version;
  if (n.net_plugin_version) j["net_plugin_version"] = *n.net_plugin_version;
  return j;
}

}  // namespace

Json to_json(const Profile& p) {
  Json j;
  j["schema_version"] = p.schema_version;
  j["kind"] = kProfileKind;
  Json prov;
  prov["created_at"] = p.provenance.created_at;
  prov["created_on"] = p.provenance.created_on;
  prov["fabcheck_version"] = p.provenance.fabcheck_version;
  Json inputs = Json::array();
  for (const auto& in : p.provenance.inputs)
    inputs.push_back({{"kind", in.kind},
                      {"hostname", in.hostname},
                      {"generated_at", in.generated_at},
                      {"source", in.source}});
  prov["inputs"] = inputs;
  prov["content_hash"] = p.provenance.content_hash;
  j["provenance"] = prov;
  j["nccl"] = {{"version", opt(p.nccl.version)}, {"version_source", p.nccl.version_source}};
  Json nodes = Json::array();
  for (const auto& n : p.nodes) nodes.push_back(node_json(n));
  j["nodes"] = nodes;
  j["settings"] = settings_json(p.settings);
  Json hosts = Json::object();
  for (const auto& [host, s] : p.hosts) hosts[host] = settings_json(s);
  j["hosts"] = hosts;
  const auto& c = p.container;
  j["container"] = {{"network_host", c.network_host},
                    {"memlock_unlimited", c.memlock_unlimited},
                    {"shm_size", opt(c.shm_size)},
                    {"binds", c.binds},
                    {"devices", c.devices}};
  return j;
}

std::string serialize_profile(Profile p) {
  p.provenance.content_hash.clear();
  Json j = to_json(p);
  j["provenance"]["content_hash"] = content_hash(j);
  return j.dump(2) + "\n";
}

}  // namespace fabkit::profile
