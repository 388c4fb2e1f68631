// fabcheck pair A B: measure the fabric between two hosts through agents started by a launcher,
// and say which interface and transport training should use (docs/pair.md). With 3 or more hosts
// (fabcheck pair A B C ...): the all-reduce across all of them, as a ring (group_controller.h).
#include <unistd.h>

#include <cctype>
#include <climits>
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/progress_option.h"
#include "cli/ofi_option.h"
#include "cli/rc_option.h"
#include "cli/ship_option.h"
#include "common/errors.h"
#include "fabric/pair/group_controller.h"
#include "fabric/pair/pair_controller.h"
#include "fabric/pair/pair_document.h"
#include "reports/html/html_report.h"
#include "reports/report_render.h"

namespace fabkit::cli {
namespace {

struct PairArgs {
  std::vector<std::string> hosts;
  std::string launcher = "ssh";
  std::string agent_path;
  int port = 29400;
  std::string sizes;
  std::string transports;
  int timeout_ms = 10000;
  int transport_timeout_ms = 300000;
  int iters = 20, warmup_iters = 5;
  int pings = 1000, streams = 4, bandwidth_ms = 1000;
  bool json = false;
  bool no_progress = false;
  std::string html;  // also write the report as HTML (docs/reports.md)
  ShipArgs ship;
  RcArgs rc;
  pair::OfiRdmPlan ofi;  // --ofi-provider, --ofi-messages, --ofi-lat-iters
};

pair::PairOptions pair_options(const PairArgs& a) {
  pair::PairOptions o;
  o.host_a = a.hosts[0];
  o.host_b = a.hosts[1];
  o.launcher_text = a.launcher;
  o.launcher = launch::parse_launcher(a.launcher, std::max(1, a.timeout_ms / 1000));
  o.agent_path = a.agent_path.empty() ? self_path() : a.agent_path;
  o.ship = make_shipment(a.ship, a.agent_path, o.launcher, a.timeout_ms);
  o.port = static_cast<uint16_t>(a.port);
  o.sizes_bytes = a.sizes.empty() ? pair::default_pair_sizes() : pair::parse_sizes(a.sizes);
  o.transports = comma_list(a.transports);
  o.timeout_ms = a.timeout_ms;
  o.transport_timeout_ms = a.transport_timeout_ms;
  o.iters = a.iters;
  o.warmup_iters = a.warmup_iters;
  o.pings = a.pings;
  o.streams = a.streams;
  o.bandwidth_ms = a.bandwidth_ms;
  o.rc = rc_plan(a.rc);
  o.ofi = a.ofi;
  return o;
}

int run_pair_cmd(const PairArgs& a) {
  if (a.hosts.size() < 2) throw UsageError("give two or more hosts: fabcheck pair nodeA nodeB [nodeC ...]");
  for (size_t i = 0; i < a.hosts.size(); ++i)
    for (size_t j = i + 1; j < a.hosts.size(); ++j)
      if (a.hosts[i] == a.hosts[j]) throw UsageError("host " + a.hosts[i] + " is given twice");
  pair::PairOptions o = pair_options(a);
  // Validate the launcher argv before starting anything (bad host names are usage errors).
  for (const auto& h : a.hosts) launch::launcher_argv(o.launcher, h, {o.agent_path});
  if (!a.html.empty() && a.hosts.size() > 2)
    throw UsageError("--html renders the 2-host pair report; with " + std::to_string(a.hosts.size()) +
                     " hosts use --json (the pair_group section, docs/json/pair.md)");
  if (!a.html.empty()) check_output_path("--html", a.html);  // before minutes of measuring
  Report r;
  auto progress = make_progress(a.no_progress);
  o.progress = progress.get();
  if (a.hosts.size() == 2) {
    r = pair::build_pair_report(pair::run_pair(o));
  } else {
    pair::GroupOptions g;
    g.hosts = a.hosts;
    g.pair = o;
    r = pair::build_group_report(pair::run_group(g));
  }
  progress.reset();  // its line is gone before the report is printed
  if (!a.html.empty())
    write_output_file(
        "--html", a.html,
        reports::html::render_html(
            {{"fabcheck pair", reports::InputKind::kPairReport, report_to_json(r), {}}},
            r.generated_at));
  return reports::render_report(r, a.json, std::cout);
}

}  // namespace

void register_pair_command(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<PairArgs>();
  auto* sub = app.add_subcommand("pair", "Measure the fabric between two nodes, or all-reduce across N (TCP per interface "
                                         "pair, rendezvous port, all-reduce per transport) and "
                                         "recommend the interface and transport");
  sub->add_option("hosts", a->hosts, "nodeA nodeB [nodeC ...] (rank 0 is nodeA; 3 or more: a ring all-reduce)")
      ->expected(2, 256)
      ->required();
  sub->add_option("--launcher", a->launcher,
                  "ssh (default), srun, or a template such as 'ip netns exec {host}'");
  sub->add_option("--agent-path", a->agent_path, "fabcheck on the hosts (default: this binary's path)");
  sub->add_option("--port", a->port, "Rendezvous port to check (MASTER_PORT)")->check(CLI::Range(1, 65535));
  sub->add_option("--sizes", a->sizes, "All-reduce sizes, e.g. 8,1K,1M,64M (default 8 B .. 128 MiB x4, then 256 MiB)");
  sub->add_option("--transports", a->transports, "Only these transports (comma list; none = skip the all-reduce runs)");
  sub->add_option("--timeout-ms", a->timeout_ms, "Bound on each control step")->check(CLI::Range(100, 600000));
  sub->add_option("--transport-timeout-ms", a->transport_timeout_ms, "Bound on one transport's sweep")
      ->check(CLI::Range(100, 3600000));
  sub->add_option("--iters", a->iters, "Timed all-reduce iterations per size")->check(CLI::Range(1, 100000));
  sub->add_option("--warmup-iters", a->warmup_iters, "Untimed iterations per size")->check(CLI::Range(0, 100000));
  sub->add_option("--pings", a->pings, "Round trips per interface pair")->check(CLI::Range(1, 100000));
  sub->add_option("--streams", a->streams, "Streams in the multi-stream test")->check(CLI::Range(1, 64));
  sub->add_option("--bandwidth-ms", a->bandwidth_ms, "Duration of each bandwidth test")->check(CLI::Range(10, 60000));
  sub->add_flag("--json", a->json, "Print the report as JSON (docs/json/pair.md)");
  sub->add_option("--html", a->html, "Also write the report as one self-contained HTML file");
  add_rc_options(sub, &a->rc);
  add_ofi_options(sub, &a->ofi);
  add_ship_options(sub, &a->ship);
  add_no_progress_flag(sub, &a->no_progress);
  sub->callback([a, exit_code] {
    *exit_code = run_command("pair", a->json, [&] { return run_pair_cmd(*a); });
  });
}

}  // namespace fabkit::cli
