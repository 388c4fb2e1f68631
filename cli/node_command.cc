// fabcheck node: inspect this node (or a --sysroot fixture tree) and report findings.
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "fabkit/config.h"
#include "common/errors.h"
#include "probes/node_probe.h"
#include "reports/html/html_report.h"
#include "reports/report_render.h"

namespace fabkit::cli {
namespace {

struct NodeArgs {
  bool json = false;
  std::string sysroot;
  std::string peer;
  std::string topo;
  int counter_interval_ms = 50;  // probe_context.h says why
  std::string html;              // also write the report as HTML (docs/reports.md)
};

int run_node(const NodeArgs& a) {
  if (!a.html.empty()) check_output_path("--html", a.html);
  ProbeContext ctx;
  ctx.env = Environment::from_process();
  if (!a.sysroot.empty()) {
    if (!std::filesystem::is_directory(a.sysroot))
      throw UsageError("--sysroot " + a.sysroot +
                       ": not a directory; give the root of a copied tree holding sys/, proc/, etc/");
    ctx.roots = SystemRoots::under(a.sysroot);
  } else {
    ctx.roots = SystemRoots::live_system(ctx.env.get("HOME").value_or(""));
  }
  if (!a.peer.empty()) ctx.options.peer = a.peer;
  if (!a.topo.empty()) ctx.options.topo_file = a.topo;
  ctx.options.rdma_counter_interval_ms = a.counter_interval_ms;
  Report r = probe_this_node(ctx);
  // From the JSON document, as `fabcheck report` does, so both render the same thing.
  if (!a.html.empty())
    write_file_output(
        "--html", a.html,
        reports::html::render_html(
            {{"fabcheck node", reports::InputKind::kNodeReport, reports::report_to_json(r), {}}},
            r.generated_at));
  return reports::render_report(r, a.json, std::cout);
}

}  // namespace

void register_node_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<NodeArgs>();
  auto* sub = app.add_subcommand("node", "Inspect this node: RDMA, limits, interfaces, NCCL "
                                         "settings, topology, locality, GPUDirect, GPUs");
  sub->add_flag("--json", args->json, "Print the report as JSON (docs/json-schema.md)");
  sub->add_option("--sysroot", args->sysroot,
                  "Read sys/, proc/, dev/, etc/ under DIR instead of / (fixtures, copied trees)");
  sub->add_option("--peer", args->peer,
                  "Host or address of a peer: recommend the interface on its subnet");
  sub->add_option("--topo", args->topo, "NCCL topology XML to check (default: NCCL_TOPO_FILE)");
  sub->add_option("--html", args->html, "Also write the report as one self-contained HTML file");
  sub->add_option("--counter-interval-ms", args->counter_interval_ms,
                  "Read RDMA port error counters twice this far apart and report what rose (0: once)")
      ->check(CLI::Range(0, 60000));
  sub->callback([args, exit_code] {
    *exit_code = run_command("node", args->json, [&] { return run_node(*args); });
  });
}

}  // namespace fabkit::cli
