// fabcheck topo FILE: the model of an NCCL/RCCL topology XML or an hwloc XML export: NUMA nodes,
// GPUs, NICs (bus ids, nets, speeds) and each GPU's nearest NIC with NCCL's path level.
#include <iostream>

#include "cli/command.h"
#include "common/errors.h"
#include "common/report.h"
#include "probes/locality/locality_facts.h"
#include "reports/report_render.h"
#include "topo/topology_file.h"
#include "topo/topology_json.h"

namespace fabkit::cli {
namespace {

struct TopoArgs {
  bool json = false;
  std::string file;
};

int run_topo(const TopoArgs& a) {
  topo::LoadedTopology lt;
  try {
    lt = topo::load_topology_file(a.file);
  } catch (const topo::TopoParseError& e) {
    throw UsageError(e.what());
  }
  if (lt.kind == topo::DocumentKind::kNcclGraph)
    throw UsageError(a.file + ": this is an NCCL graph file (<graphs>, " +
                     std::to_string(lt.graph_count) +
                     " graph(s) of channel orderings, what NCCL_GRAPH_FILE takes), not a topology; "
                     "give an NCCL topology (<system>, from NCCL_TOPO_DUMP_FILE) or an hwloc XML "
                     "export (`lstopo --of xml`)");
  Report r = new_report("topo");
  r.findings = probes::judge_topology_locality(lt.topology, a.file);
  for (const auto& n : lt.notes) r.findings.push_back(info("topo.unknown_element", a.file, n));
  if (lt.notes_left_out > 0)
    r.findings.push_back(info("topo.unknown_element", a.file,
                              std::to_string(lt.notes_left_out) +
                                  " more unknown elements/attributes skipped (not listed)"));
  Json facts = {
      {"path", a.file}, {"kind", to_string(lt.kind)}, {"version", lt.version}, {"notes", lt.notes}};
  if (lt.notes_left_out > 0) facts["notes_left_out"] = lt.notes_left_out;
  Json model = topo::to_json(lt.topology);
  for (auto it = model.begin(); it != model.end(); ++it) facts[it.key()] = it.value();
  r.sections.push_back({"topo", facts});
  return reports::render_report(r, a.json, std::cout);
}

}  // namespace

void register_topo_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<TopoArgs>();
  auto* sub = app.add_subcommand("topo",
                                 "Show the model of an NCCL topology XML or hwloc XML export: "
                                 "NUMA nodes, GPUs, NICs, each GPU's nearest NIC");
  sub->add_option("file", args->file, "NCCL/RCCL topology XML or hwloc XML export")->required();
  sub->add_flag("--json", args->json, "Print the report as JSON (docs/json/topo.md)");
  sub->callback([args, exit_code] {
    *exit_code = run_command("topo", args->json, [&] { return run_topo(*args); });
  });
}

}  // namespace fabkit::cli
