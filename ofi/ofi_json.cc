#include "ofi/ofi_json.h"

#include "common/errors.h"

namespace fabkit::ofi {
namespace {

class Reader {
 public:
  explicit Reader(std::string what) : what_(std::move(what)) {}

  [[noreturn]] void bad(const std::string& path, const std::string& expected) const {
    throw UsageError(what_ + ": field '" + path + "' must be " + expected +
                     "; give a file written by `fabcheck node --ofi-record FILE` "
                     "(tests/fixtures/libfabric/README.md describes the fields)");
  }

  const Json& object(const Json& j, const std::string& path) const {
    if (!j.is_object()) bad(path, "an object");
    return j;
  }

  std::string string(const Json& obj, const std::string& key, const std::string& path,
                     bool required = true) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
      if (required) bad(path + key, "a string (it is missing)");
      return {};
    }
    if (!it->is_string()) bad(path + key, "a string");
    return it->get<std::string>();
  }

  std::vector<std::string> strings(const Json& obj, const std::string& key,
                                   const std::string& path) const {
    auto it = obj.find(key);
    if (it == obj.end()) bad(path + key, "a list of strings (it is missing)");
    if (!it->is_array()) bad(path + key, "a list of strings");
    std::vector<std::string> out;
    for (const auto& e : *it) {
      if (!e.is_string()) bad(path + key, "a list of strings");
      out.push_back(e.get<std::string>());
    }
    return out;
  }

 private:
  std::string what_;
};

}  // namespace

Json to_json(const OfiProvider& p) {
  return {{"provider", p.name},
          {"fabric", p.fabric},
          {"domain", p.domain},
          {"version", p.version},
          {"endpoint_type", p.endpoint_type},
          {"caps", p.caps},
          {"mr_mode", p.mr_mode}};
}

Json to_json(const OfiLibrary& l) {
  Json j = {{"loaded", l.loaded}};
  j["path"] = l.path.empty() ? Json() : Json(l.path);
  j["version"] = l.version.empty() ? Json() : Json(l.version);
  j["api_version"] = l.api_version.empty() ? Json() : Json(l.api_version);
  j["error"] = l.error.empty() ? Json() : Json(l.error);
  return j;
}

Json discovery_to_json(const OfiDiscovery& d) {
  Json providers = Json::array();
  for (const auto& p : d.providers) providers.push_back(to_json(p));
  return {{"library", to_json(d.library)},
          {"getinfo_error", d.getinfo_error ? Json(*d.getinfo_error) : Json()},
          {"providers", providers}};
}

OfiDiscovery discovery_from_json(const Json& j, const std::string& what) {
  Reader r(what);
  r.object(j, "(top level)");
  OfiDiscovery d;
  auto lib_it = j.find("library");
  if (lib_it == j.end()) r.bad("library", "an object (it is missing)");
  const Json& lib = r.object(*lib_it, "library");
  auto loaded = lib.find("loaded");
  if (loaded == lib.end() || !loaded->is_boolean()) r.bad("library.loaded", "true or false");
  d.library.loaded = loaded->get<bool>();
  d.library.path = r.string(lib, "path", "library.", false);
  d.library.version = r.string(lib, "version", "library.", d.library.loaded);
  d.library.api_version = r.string(lib, "api_version", "library.", false);
  d.library.error = r.string(lib, "error", "library.", !d.library.loaded);
  if (d.library.loaded && !parse_major_minor(d.library.version))
    r.bad("library.version",
          "a libfabric release such as \"1.17.0\" (it is \"" + d.library.version + "\")");
  auto err = j.find("getinfo_error");
  if (err != j.end() && !err->is_null()) {
    if (!err->is_string()) r.bad("getinfo_error", "null or a string");
    d.getinfo_error = err->get<std::string>();
  }
  auto providers = j.find("providers");
  if (providers == j.end() || !providers->is_array()) r.bad("providers", "a list");
  for (size_t i = 0; i < providers->size(); ++i) {
    std::string path = "providers[" + std::to_string(i) + "].";
    const Json& e = r.object((*providers)[i], path.substr(0, path.size() - 1));
    OfiProvider p;
    p.name = r.string(e, "provider", path);
    p.fabric = r.string(e, "fabric", path);
    p.domain = r.string(e, "domain", path);
    p.version = r.string(e, "version", path);
    p.endpoint_type = r.string(e, "endpoint_type", path);
    p.caps = r.strings(e, "caps", path);
    p.mr_mode = r.strings(e, "mr_mode", path);
    d.providers.push_back(std::move(p));
  }
  if (!d.library.loaded && !d.providers.empty())
    r.bad("providers", "empty when library.loaded is false (an unloaded library offers none)");
  return d;
}

}  // namespace fabkit::ofi
