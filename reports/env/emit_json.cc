// For programs (fabtrain, launch wrappers): the resolved environment plus each choice's basis.
#include "common/json.h"
#include "reports/env/emitter.h"

namespace fabkit::reports::env {
using namespace profile;  // the resolved settings' types

std::string emit_json(const EmitInput& in) {
  Json j;
  j["schema_version"] = kProfileSchemaVersion;
  j["kind"] = "fabkit-env";
  j["host"] = in.host;
  j["source"] = in.source;
  Json env = Json::object();
  Json settings = Json::array();
  for (const auto& r : in.settings) {
    if (r.setting.value) env[r.name] = *r.setting.value;
    settings.push_back({{"name", r.name},
                        {"value", r.setting.value ? Json(*r.setting.value) : Json(nullptr)},
                        {"basis", to_string(r.setting.basis)},
                        {"per_host", r.per_host},
                        {"reason", r.setting.reason}});
  }
  j["env"] = env;
  j["settings"] = settings;
  const auto& c = in.container;
  j["container"] = {{"network_host", c.network_host},
                    {"memlock_unlimited", c.memlock_unlimited},
                    {"shm_size", c.shm_size ? Json(*c.shm_size) : Json(nullptr)},
                    {"binds", c.binds},
                    {"devices", c.devices}};
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace fabkit::reports::env
