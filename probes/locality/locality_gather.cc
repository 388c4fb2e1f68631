#include <chrono>
#include <filesystem>

#include "common/root_open.h"
#include "probes/locality/locality_facts.h"
#include "topo/hwloc_topology.h"
#include "topo/topology_file.h"

namespace fabkit::probes {

LocalityFacts gather_locality(const ProbeContext& ctx) {
  LocalityFacts f;
  f.hwloc_version = topo::hwloc_runtime_version();
  auto start = std::chrono::steady_clock::now();
  try {
    if (ctx.roots.live) {
      f.input = "live";
      f.topology = topo::load_live_hwloc_topology();
    } else {
      std::filesystem::path xml = ctx.roots.root / "hwloc.xml";
      if (!path_exists(xml)) {
        f.skipped = true;
        f.skip_reason = "skipped: hwloc reads the live machine, and " + xml.string() +
                        " (an `lstopo --of xml` export of the captured node) is absent";
        return f;
      }
      f.input = xml.string();
      topo::LoadedTopology lt = topo::load_topology_file(xml);
      if (lt.kind != topo::DocumentKind::kHwlocXml)
        throw topo::TopoParseError(
            xml.string(), 0, "",
            std::string("is a ") + to_string(lt.kind) + " document, not an hwloc export");
      f.topology = std::move(lt.topology);
    }
  } catch (const std::exception& e) {
    f.error = e.what();
    f.topology.reset();
  }
  f.load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return f;
}

}  // namespace fabkit::probes
