#include <filesystem>

#include "common/errors.h"
#include "common/file_reader.h"
#include "common/root_open.h"
#include "probes/topo_file/topo_file_facts.h"
#include "topo/pci_bus_id.h"

namespace fabkit::probes {

TopoFileFacts gather_topo_file(const ProbeContext& ctx) {
  TopoFileFacts f;
  if (ctx.options.topo_file) {
    f.path = ctx.options.topo_file->string();
    f.source = "--topo";
  } else if (auto v = ctx.env.get("NCCL_TOPO_FILE"); v && !v->empty()) {
    f.path = *v;
    f.source = "NCCL_TOPO_FILE";
  } else {
    return f;
  }
  std::error_code ec;
  f.present = std::filesystem::exists(*f.path, ec);
  // --topo is typed on this command line: a missing file there is a usage error (exit 2), while
  // NCCL_TOPO_FILE pointing nowhere is a finding about the environment jobs will inherit.
  if (!f.present && f.source == "--topo")
    throw UsageError("--topo " + *f.path + ": no such file; give the NCCL topology XML to check");
  if (!f.present) return f;
  try {
    f.loaded = topo::load_topology_file(*f.path);
  } catch (const topo::TopoParseError& e) {
    f.error = e.what();
    return f;
  }
  std::filesystem::path devices = ctx.roots.sys / "bus/pci/devices";
  f.pci_checked = path_is_directory(devices);
  if (!f.pci_checked) return f;
  std::vector<std::string> ids;
  for (const auto& g : f.loaded->topology.gpus) ids.push_back(g.bus_id);
  for (const auto& n : f.loaded->topology.nics)
    if (!n.bus_id.empty()) ids.push_back(n.bus_id);
  for (const auto& id : ids) f.endpoint_present[id] = false;
  // sysfs names are already "dddd:bb:dd.f" lower-case, but normalise anyway (NCCL does the same
  // round trip, and copied trees sometimes carry upper-case names).
  for (const auto& name : list_dir(devices))
    if (auto id = topo::normalize_bus_id(name); id && f.endpoint_present.count(*id))
      f.endpoint_present[*id] = true;
  return f;
}

}  // namespace fabkit::probes
