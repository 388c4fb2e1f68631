#include "ofi/ofi_json.h"
#include "probes/libfabric/libfabric_facts.h"

namespace fabkit::probes {

Json to_json(const LibfabricFacts& f) {
  Json j = {{"gathered", f.gathered}};
  j["not_gathered_reason"] = f.gathered ? Json() : Json(f.not_gathered_reason);
  j["source"] = f.gathered ? Json(f.discovery.source) : Json();
  // The library's release at the top, where `fabcheck validate` compares it between nodes.
  j["version"] = f.discovery.library.loaded ? Json(f.discovery.library.version) : Json();
  Json d = ofi::discovery_to_json(f.discovery);
  j["library"] = d["library"];
  j["getinfo_error"] = d["getinfo_error"];
  j["providers"] = d["providers"];
  return j;
}

}  // namespace fabkit::probes
