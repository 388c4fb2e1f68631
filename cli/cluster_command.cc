// fabcheck cluster [HOST...]: node checks on every node, pair rounds over the schedule, the matrix
// report naming the bad node or link, and the merged cluster.json (docs/cluster.md); with
// --baseline, the run compared with a saved one (docs/reports.md).
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "cli/progress_option.h"
#include "cli/ofi_option.h"
#include "cli/plan_option.h"
#include "cli/rc_option.h"
#include "cli/ship_option.h"
#include "common/environment.h"
#include "common/errors.h"
#include "common/hostlist.h"
#include "profile/local_host.h"
#include "profile/profile_document.h"
#include "reports/baseline/cluster_baseline.h"
#include "reports/input_document.h"
#include "reports/prom/prom_text.h"
#include "reports/report_render.h"
#include "slurm/cluster_document.h"
#include "slurm/cluster_profile.h"
#include "slurm/controller_budget.h"
#include "slurm/controller_limits.h"

namespace fabkit::cli {
namespace {

// pair::parse_sizes names --sizes in its message; a search flag's bad value names the flag.
std::vector<uint64_t> one_size(const std::string& flag, const std::string& text) {
  try {
    return pair::parse_sizes(text);
  } catch (const UsageError&) {
    throw UsageError(flag + " '" + text + "': give one size from 4 to 4G with an optional K, M or G suffix, e.g. " + flag + " 128K");
  }
}

struct ClusterArgs {
  std::vector<std::string> hosts;
  std::string launcher;  // default: srun inside an allocation, else ssh
  std::string agent_path;
  std::string profile_out;
  std::string json_out;  // the JSON report to a file, beside the text on stdout
  std::string prom;      // the key figures as a Prometheus textfile (node_exporter)
  std::string baseline;  // a saved fabcheck cluster --json report to compare this run with
  reports::baseline::ClusterBaselineOptions baseline_opts;
  int max_parallel = 0;  // 0: every pair of a round at once, within the controller's budget
  int node_timeout_ms = 60000;
  int timeout_ms = 10000;
  int transport_timeout_ms = 120000;
  std::string transports = "none";
  std::string sizes = "1M,64M";
  int pings = 200, streams = 4, bandwidth_ms = 300;
  double slow_fraction = 0.5;
  double noise_sigmas = -1;
  bool plan_only = false;
  bool no_retest = false;
  bool search = false, no_search = false;
  std::string search_bytes;  // empty: n x --search-chunk per group
  std::string search_chunk = "128K";
  int search_max_links = 4, search_repeats = 3, search_blocks = 0;
  double search_fraction = 0.25;
  PlanArgs plan;  // --pairs, --budget, --topology, --per-pair-s
  bool json = false;
  bool no_progress = false;
  ShipArgs ship;
  RcArgs rc;
  pair::OfiRdmPlan ofi;  // --ofi-provider, --ofi-messages, --ofi-lat-iters
};

// The default asked for every pair of a round at once and the controller's limits allow fewer:
// the run is still right, only slower (more waves), and the fix is the limit's.
Finding parallel_limited(const slurm::ParallelChoice& c) {
  return info("cluster.parallel_limited", "controller", c.why,
              "raise the limit named (the run's waves at this width are in the schedule)");
}

// The --baseline file, read and checked before anything is launched.
Json load_cluster_baseline(const std::string& path) {
  auto d = reports::load_input(path);  // UsageError naming the file when unreadable or not JSON
  if (d.kind != reports::InputKind::kClusterReport)
    throw UsageError("--baseline " + path + " is a " + reports::to_string(d.kind) +
                     "; fabcheck cluster --baseline takes a saved fabcheck cluster --json report");
  try {
    reports::baseline::check_cluster_run_report(d.doc, "--baseline " + path);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return d.doc;
}

// The run compared with the baseline: its findings join the run's, its section the report's;
// returns the side-by-side table for the text output.
std::string judge_against_baseline(const ClusterArgs& a, const Json& old_doc, Report& r) {
  namespace bl = reports::baseline;
  auto res = bl::compare_cluster_baseline(old_doc, report_to_json(r), a.baseline_opts);
  r.findings.insert(r.findings.end(), res.findings.begin(), res.findings.end());
  r.sections.push_back({"cluster_baseline", bl::cluster_baseline_to_json(
                                                res, a.baseline_opts, a.baseline,
                                                a.json_out.empty() ? "(this run)" : a.json_out)});
  return bl::cluster_baseline_table_text(res, a.baseline_opts);
}

int run_cluster_cmd(const ClusterArgs& a) {
  slurm::ClusterOptions o;
  o.hosts = a.hosts;
  auto nodelist = Environment::from_process().get("SLURM_JOB_NODELIST");
  if (o.hosts.empty()) {
    if (!nodelist || nodelist->empty())
      throw UsageError(
          "no hosts: give them (fabcheck cluster node01 node02 node03) or run inside "
          "an allocation (salloc -N4 fabcheck cluster), which sets SLURM_JOB_NODELIST");
    o.hosts = expand_hostlist(*nodelist);
  }
  for (size_t i = 0; i < o.hosts.size(); ++i)
    for (size_t j = i + 1; j < o.hosts.size(); ++j)
      if (o.hosts[i] == o.hosts[j])
        throw UsageError("host '" + o.hosts[i] + "' is given twice; give each node once");
  if (o.hosts.size() < 2)
    throw UsageError("one host (" + o.hosts[0] +
                     "): fabcheck cluster needs 2 or more; use "
                     "`fabcheck node` for one");
  o.launcher_text = !a.launcher.empty() ? a.launcher : (a.hosts.empty() ? "srun" : "ssh");
  o.launcher = launch::parse_launcher(o.launcher_text, std::max(1, a.timeout_ms / 1000));
  o.agent_path = a.agent_path.empty() ? self_path() : a.agent_path;
  for (const auto& h : o.hosts) launch::launcher_argv(o.launcher, h, {o.agent_path});  // names
  // Any plan's rounds are disjoint pairs: at most N/2 of them at once.
  const int widest_round = static_cast<int>(o.hosts.size() / 2);
  const slurm::ParallelChoice parallel =
      slurm::choose_parallel(a.max_parallel, widest_round, static_cast<int>(o.hosts.size()),
                             slurm::parallel_budget(slurm::gather_controller_limits()));
  o.max_parallel = parallel.pair_runs;
  o.max_parallel_nodes = parallel.node_checks;
  if (a.search && a.no_search) throw UsageError("--search and --no-search contradict each other; give one");
  o.search.force = a.search;
  o.search.enabled = !a.no_search;
  if (!a.search_bytes.empty()) {
    auto search_bytes = one_size("--search-bytes", a.search_bytes);
    if (search_bytes.size() != 1)
      throw UsageError("--search-bytes '" + a.search_bytes + "': give one size, e.g. --search-bytes 1M");
    o.search.policy.fixed_bytes = search_bytes[0];
  }
  auto chunk = one_size("--search-chunk", a.search_chunk);
  if (chunk.size() != 1 || chunk[0] == 0)
    throw UsageError("--search-chunk '" + a.search_chunk + "': give one size above 0, e.g. --search-chunk 128K");
  o.search.policy.chunk_bytes = chunk[0];
  o.search.policy.max_links = a.search_max_links;
  o.search.policy.repeats = a.search_repeats;
  o.search.policy.blocks = a.search_blocks;
  o.search.fraction = a.search_fraction;
  // The search's flags before the plan: a planned search has its estimated cost kept out of the
  // budget (slurm/plan_search.h).
  const slurm::PlanWithSearch planned =
      make_cluster_plan(a.plan, o.hosts, o.max_parallel, o.search.policy, o.search.fraction,
                        a.search      ? slurm::SearchMode::kForce
                        : a.no_search ? slurm::SearchMode::kOff
                                      : slurm::SearchMode::kAuto);
  const slurm::ClusterPlan& plan = planned.plan;
  if (planned.search_planned && !o.search.force) o.search.cover_trigger = planned.trigger;
  o.plan = plan.asked;
  o.rounds = plan.rounds;
  o.pair.rc = rc_plan(a.rc);  // a bad --rc-* is a usage error before anything starts
  o.pair.ofi = a.ofi;
  if (a.plan_only && !a.baseline.empty())
    throw UsageError(
        "--baseline compares a run with a saved one; --plan-only runs nothing: "
        "give one of them");
  Json baseline_doc = a.baseline.empty() ? Json() : load_cluster_baseline(a.baseline);
  // Every output path before minutes of measuring (and before --plan-only prints).
  check_stdout_or_path("--json-out", a.json_out);
  check_stdout_or_path("--profile-out", a.profile_out);
  if (!a.prom.empty()) check_output_path("--prom", a.prom);
  if (a.plan_only) {
    Report r = slurm::build_plan_report(o.hosts, plan);
    r.hostname = profile::local_hostname();
    if (parallel.limited) r.findings.push_back(parallel_limited(parallel));
    return reports::render_report(r, a.json, std::cout);
  }
  o.node_timeout_ms = a.node_timeout_ms;
  o.retest = !a.no_retest;
  o.matrix.slow_fraction = a.slow_fraction;
  o.matrix.noise_sigmas = a.noise_sigmas;
  o.matrix.retest = !a.no_retest;
  auto& p = o.pair;
  p.launcher_text = o.launcher_text;
  p.launcher = o.launcher;
  p.agent_path = o.agent_path;
  p.ship = make_shipment(a.ship, a.agent_path, o.launcher, a.timeout_ms);
  p.sizes_bytes = pair::parse_sizes(a.sizes);
  p.transports = comma_list(a.transports);
  p.timeout_ms = a.timeout_ms;
  p.transport_timeout_ms = a.transport_timeout_ms;
  p.pings = a.pings;
  p.streams = a.streams;
  p.bandwidth_ms = a.bandwidth_ms;
  p.iters = 5;
  p.warmup_iters = 1;

  auto progress = make_progress(a.no_progress);
  o.progress = progress.get();
  slurm::ClusterFacts facts = slurm::run_cluster(o);
  progress.reset();  // its line is gone before anything else is printed
  Report r = slurm::build_cluster_report(facts, o.matrix, &plan);
  r.hostname = profile::local_hostname();
  if (parallel.limited) r.findings.push_back(parallel_limited(parallel));
  if (!a.profile_out.empty()) {
    // The profile needs at least one node report; without one the report says why. Writing it
    // is not guarded here: its path was checked before the run, and a write that still fails
    // (a full disk) is a usage error naming --profile-out.
    std::optional<std::string> text;
    try {
      text = profile::serialize_profile(slurm::cluster_profile(facts, r.hostname));
    } catch (const UsageError& e) {
      r.findings.push_back(
          fail("cluster.profile_not_written", a.profile_out, e.what(),
               "fix the node checks that failed (cluster.node_check_failed) and re-run"));
    }
    if (text) write_output("--profile-out", a.profile_out, *text);
  }
  std::string baseline_table;
  if (!a.baseline.empty()) baseline_table = judge_against_baseline(a, baseline_doc, r);
  if (!a.json_out.empty()) {
    std::ostringstream doc;
    reports::render_json(r, doc);
    write_output("--json-out", a.json_out, doc.str());
  }
  if (!a.prom.empty()) {
    // Rendered from the JSON the report prints, so it reads the same as `report --prom`.
    std::vector<reports::prom::Family> families =
        reports::prom::cluster_families(report_to_json(r));
    families.push_back(
        reports::prom::cluster_check_timestamp(static_cast<double>(std::time(nullptr))));
    write_output_file("--prom", a.prom, reports::prom::render(families));
  }
  // The baseline's side-by-side figures after the run's own tables (--json: its section).
  return reports::render_report(r, a.json, std::cout, baseline_table);
}

}  // namespace

void register_cluster_command(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ClusterArgs>();
  auto* sub = app.add_subcommand(
      "cluster",
      "Check every node, measure pairs of nodes in rounds of disjoint pairs, and name "
      "the slow node or bad link (docs/cluster.md)");
  sub->add_option("hosts", a->hosts, "Nodes (default: SLURM_JOB_NODELIST of this allocation)");
  sub->add_option("--launcher", a->launcher,
                  "srun (default inside an allocation), ssh (default with hosts), or a template "
                  "such as 'ip netns exec {host}'");
  sub->add_option("--agent-path", a->agent_path,
                  "fabcheck on the hosts (default: this binary's path)");
  add_plan_options(sub, &a->plan);
  sub->add_option("--profile-out", a->profile_out, "Write the merged cluster.json here");
  sub->add_option("--json-out", a->json_out,
                  "Also write the JSON report here (temp file + rename); stdout keeps the text");
  sub->add_option("--prom", a->prom,
                  "Also write the key figures (per node and per pair) as a Prometheus textfile "
                  "for node_exporter (docs/reports.md)");
  sub->add_option("--max-parallel", a->max_parallel,
                  "Pair runs (and node checks) at once (default: every pair of a round, as far "
                  "as the controller's descriptor and thread limits allow)")
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--node-timeout-ms", a->node_timeout_ms, "Bound on each node check")
      ->check(CLI::Range(1000, 3600000));
  sub->add_option("--timeout-ms", a->timeout_ms, "Bound on each control step of a pair run")
      ->check(CLI::Range(100, 600000));
  sub->add_option("--transport-timeout-ms", a->transport_timeout_ms,
                  "Bound on one transport's sweep")
      ->check(CLI::Range(100, 3600000));
  sub->add_option("--transports", a->transports,
                  "All-reduce transports per pair (comma list; default none: the matrix uses the "
                  "TCP and RDMA RC figures)");
  sub->add_option("--sizes", a->sizes, "All-reduce sizes when --transports is given");
  sub->add_option("--pings", a->pings, "Round trips per interface pair")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--streams", a->streams, "Streams in the multi-stream test")
      ->check(CLI::Range(1, 64));
  sub->add_option("--bandwidth-ms", a->bandwidth_ms, "Duration of each bandwidth test")
      ->check(CLI::Range(10, 60000));
  sub->add_option("--slow-fraction", a->slow_fraction,
                  "Below this fraction of the cluster's figure a node or link is slow")
      ->check(CLI::Range(0.01, 0.99));
  sub->add_option(
         "--noise-sigmas", a->noise_sigmas,
         "A link is slow only this many robust standard deviations below the healthy links' median "
         "too, where that is below --slow-fraction (0: --slow-fraction alone; default: from the "
         "number of links, at least 3)")
      ->check(CLI::Range(0.0, 20.0));
  sub->add_flag("--no-retest", a->no_retest,
                "Do not measure the flagged links a second time (flaky vs bad)");
  sub->add_flag("--search", a->search,
                "Run the bad-link search (group testing with ring all-reduces) even when the "
                "matrix is clean");
  sub->add_flag("--no-search", a->no_search,
                "Never run the bad-link search (by default it runs when a flagged link stays bad)");
  sub->add_option("--search-bytes", a->search_bytes,
                  "One all-reduce size for every group test (default: the group's nodes x "
                  "--search-chunk)");
  sub->add_option("--search-chunk", a->search_chunk,
                  "Bytes per rank of a group test's all-reduce: a group of n runs n x this "
                  "(default 128K)");
  sub->add_option("--search-max-links", a->search_max_links,
                  "Stop the search after this many bad links, bad nodes, flaky links or pairs not "
                  "reproduced (default 4)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--search-repeats", a->search_repeats,
                  "Tests of a found pair alone: slow in all = bad, in some = flaky (default 3)")
      ->check(CLI::Range(1, 20));
  sub->add_option("--search-blocks", a->search_blocks,
                  "Blocks of the search's first stage (default 0: the cheapest by the cost model; "
                  "1: one group of every node)")
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--search-fraction", a->search_fraction,
                  "A group is slow when a ring's busbw is below this fraction of the healthy "
                  "links' TCP figure (default 0.25)")
      ->check(CLI::Range(0.001, 0.99));
  sub->add_flag("--plan-only", a->plan_only,
                "Print the plan (strategy, rounds, estimate against --budget, coverage); launch "
                "nothing");
  auto* baseline =
      sub->add_option("--baseline", a->baseline,
                      "Compare the run with this saved fabcheck cluster --json report (a "
                      "regression fails; docs/reports.md)");
  sub->add_option("--regression-pct", a->baseline_opts.regression_pct,
                  "With --baseline: fail when a pair's bandwidth falls more than this many "
                  "percent below the baseline (default 10)")
      ->needs(baseline)
      ->check(CLI::Range(0.0, 100.0));
  sub->add_option("--rtt-regression-pct", a->baseline_opts.rtt_regression_pct,
                  "With --baseline: warn when a pair's median RTT rose more than this many "
                  "percent (and 10 us) above the baseline (default 50)")
      ->needs(baseline)
      ->check(CLI::Range(0.0, 10000.0));
  sub->add_option("--expect-link-fraction", a->baseline_opts.expect_link_fraction,
                  "With --baseline: warn when a pair's bandwidth is below this fraction of its "
                  "link rate (default 0.9; 0 = off)")
      ->needs(baseline)
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--expect-median-pct", a->baseline_opts.expect_median_pct,
                  "With --baseline: warn when a pair's bandwidth is more than this many percent "
                  "below the median of the run's pairs (default 25; 0 = off)")
      ->needs(baseline)
      ->check(CLI::Range(0.0, 100.0));
  sub->add_flag("--json", a->json, "Print the report as JSON (docs/json/cluster.md)");
  add_rc_options(sub, &a->rc);
  add_ofi_options(sub, &a->ofi);
  add_ship_options(sub, &a->ship);
  add_no_progress_flag(sub, &a->no_progress);
  sub->callback([a, exit_code] {
    *exit_code = run_command("cluster", a->json, [&] { return run_cluster_cmd(*a); });
  });
}

}  // namespace fabkit::cli
