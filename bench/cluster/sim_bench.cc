// fabkit-fabric-sim: tables of the simulated `fabcheck cluster` (detection rate, false blame,
// wall time) vs N and fault kind, with per-pair times and the healthy figures' spread from a real
// run (--measured, a `fabcheck cluster --json` report), and --predict: what the simulator expects
// for that real run's N, plan and parallelism, next to what the run found.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "common/errors.h"
#include "common/input_file.h"
#include "common/json_read.h"
#include "slurm/planner.h"
#include "slurm/sim/fabric.h"
#include "slurm/sim/measured.h"
#include "slurm/sim/run.h"

using namespace fabkit;
using namespace fabkit::slurm;
using namespace fabkit::slurm::sim;

namespace {

MeasuredRun load(const std::string& path) {
  InputSpec spec;
  spec.what = "--measured";
  spec.max_bytes = 256u << 20;
  spec.fix = "give a `fabcheck cluster --json` report";
  std::string text = read_input(path, spec);
  try {
    return measured_from_report(parse_json(text, path), path);
  } catch (const JsonReadError& e) {
    throw UsageError(std::string("--measured ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--measured ") + e.what());
  }
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1) + 0.5)];
}

struct Cell {
  int runs = 0, detected = 0, false_blame = 0, other_blame = 0, search_ran = 0;
  std::vector<double> wall, rounds;
  std::map<std::string, int> outcomes;
};

Cell run_cell(int n, FaultKind kind, int seeds, const SimOptions& so, const MeasuredRun& m,
              int per_leaf, int spines, int rails, double factor, double p_slow, bool show_false) {
  Cell c;
  FabricTopology t = fat_tree(n, per_leaf, spines, rails);
  for (int s = 0; s < seeds; ++s) {
    Rng place(0x5eed0000ULL + static_cast<uint64_t>(s) * 7919 + static_cast<uint64_t>(n));
    Fabric fab(t, m.healthy_gbit_s, place_fault(kind, t, place, factor, p_slow));
    SimOutcome o = simulate_run(fab, so, static_cast<uint64_t>(s) + 1);
    c.runs++;
    c.detected += o.detected;
    c.false_blame += o.false_blames > 0;
    c.other_blame += o.other_blames > 0;
    c.search_ran += o.search_ran;
    c.wall.push_back(o.wall_s);
    if (show_false && o.false_blames > 0) {
      std::string what;
      for (int x : o.blamed_nodes) what += " node n" + std::to_string(x);
      for (const auto& l : o.blamed_links)
        what += " link n" + std::to_string(l.a) + "<->n" + std::to_string(l.b);
      for (const auto& p : o.blamed_paths) what += " path " + spine_path_name(t, p);
      std::fprintf(stderr, "false blame: N %d %s at (%d,%d) seed %d; named:%s; search %s\n", n,
                   to_string(kind), fab.fault().a, fab.fault().b, s, what.c_str(),
                   o.search_ran ? o.search.outcome.c_str() : "not run");
    }
    if (o.search_ran) {
      c.rounds.push_back(o.search.rounds);
      c.outcomes[o.search.outcome]++;
    }
  }
  return c;
}

std::string pct(int k, int n) {
  char b[32];
  std::snprintf(b, sizeof b, "%d/%d", k, n);
  return b;
}

std::string secs(double s) {
  char b[32];
  if (s < 600)
    std::snprintf(b, sizeof b, "%.0f s", s);
  else if (s < 36000)
    std::snprintf(b, sizeof b, "%.1f min", s / 60);
  else
    std::snprintf(b, sizeof b, "%.1f h", s / 3600);
  return b;
}

std::string outcomes(const Cell& c) {
  std::string s;
  for (const auto& [k, v] : c.outcomes) s += (s.empty() ? "" : ", ") + k + " " + std::to_string(v);
  return s.empty() ? "—" : s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "fabkit-fabric-sim: the fabric simulator's tables, or its prediction for a real run"};
  // One real run gives every input, so the healthy spread, the pair waves, the bar's alpha and the
  // group tests' times agree: the 32-host search with the agents kept and ring sessions.
  std::string measured = std::string(FABKIT_SIM_TESTDATA) + "/netns-32-ring-search-session.json";
  std::string group_from;
  std::string nodes_text = "8,16,32,64,128,256,512,1024,2048,4096";
  std::string faults_text = "none,slow_link,flapping_link,slow_nic,bad_spine_port";
  std::string plan = "auto", search = "auto";
  std::string budget = "10m";
  int seeds = 100, seeds_large = 20, max_parallel = 32, per_leaf = 32, spines = 32, rails = 1;
  double factor = 0.01, p_slow = 0.5;
  double slow_fraction = -1, search_fraction = -1, search_bytes = -1;
  bool predict = false, show_false = false;
  app.add_option("--measured", measured,
                 "a `fabcheck cluster --json` report: per-pair time, "
                 "healthy figures (and the group-test model when it ran the search)");
  app.add_option("--group-measured", group_from,
                 "a report with a search to fit the group-test model from (default: --measured, "
                 "else the testdata run)");
  app.add_option("--nodes", nodes_text, "comma-separated node counts");
  app.add_option("--faults", faults_text, "comma-separated fault kinds");
  app.add_option("--plan", plan, "auto (the command's default, within --budget) | ring | all")
      ->check(CLI::IsMember({"auto", "ring", "all"}));
  app.add_option("--budget", budget, "the auto plan's --budget (default 10m)");
  app.add_option("--search", search,
                 "auto (the command's default: when a link stays flagged, or when the plan "
                 "leaves pairs unmeasured) | force (--search) | off; --predict: as the run")
      ->check(CLI::IsMember({"auto", "force", "off"}));
  app.add_option("--seeds", seeds, "seeded runs per cell up to 1024 nodes")
      ->check(CLI::PositiveNumber);
  app.add_option("--seeds-large", seeds_large, "seeded runs per cell above 1024 nodes")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-parallel", max_parallel, "pair runs at once (0: the report's in --predict)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--nodes-per-leaf", per_leaf, "default 32; --predict: every host on one leaf")
      ->check(CLI::PositiveNumber);
  app.add_option("--spines", spines)->check(CLI::PositiveNumber);
  app.add_option("--rails", rails)->check(CLI::PositiveNumber);
  app.add_option("--factor", factor, "a faulty element's capacity (1 = healthy)")
      ->check(CLI::Range(1e-6, 1.0));
  app.add_option("--p-slow", p_slow, "a flapping link's chance to be slow per measurement")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--slow-fraction", slow_fraction, "the matrix threshold (default: the report's)")
      ->check(CLI::Range(0.01, 1.0));
  app.add_option("--search-fraction", search_fraction,
                 "a group's bar, x the healthy figure (default: the measured run's)")
      ->check(CLI::Range(0.001, 1.0));
  app.add_option("--search-bytes", search_bytes,
                 "one all-reduce size for every group test (default: n x 128 KiB for a group "
                 "of n, as the command; --predict: the measured run's)")
      ->check(CLI::Range(1.0, 1e12));
  app.add_flag("--predict", predict,
               "the simulator's prediction for --measured's own N, plan and "
               "--max-parallel, next to what that run found");
  app.add_flag("--show-false", show_false, "each run with a false blame, on stderr");
  CLI11_PARSE(app, argc, argv);
  try {
    MeasuredRun m = load(measured);
    std::optional<GroupModel> group = m.group;
    std::string group_source = measured;
    if (!group_from.empty()) {
      group = load(group_from).group;
      group_source = group_from;
    } else if (!group || group->agents_start_s_per_node <= 0) {
      // A report from before the agents were kept across the search's rounds (no
      // agents_start_ms) times each ring order's own runner: the command no longer runs so.
      group_source = std::string(FABKIT_SIM_TESTDATA) + "/netns-32-ring-search-session.json";
      group = load(group_source).group;
    }
    if (!group)
      throw UsageError(group_source +
                       ": no clean group test in its search to fit the group "
                       "model from; give --group-measured with a `--search` run");
    std::vector<int> ns;
    std::vector<FaultKind> kinds;
    {
      std::stringstream ss(nodes_text);
      for (std::string x; std::getline(ss, x, ',');) {
        int v = 0;
        try {
          v = std::stoi(x);
        } catch (...) {
        }
        if (v < 2) throw UsageError("--nodes: '" + x + "' is not a node count of 2 or more");
        ns.push_back(v);
      }
      std::stringstream fs(faults_text);
      for (std::string x; std::getline(fs, x, ',');) {
        auto k = fault_kind_from_string(x);
        if (!k)
          throw UsageError("--faults: '" + x +
                           "' is not one of none, slow_link, flapping_link, "
                           "slow_nic, bad_spine_port");
        kinds.push_back(*k);
      }
    }
    // --predict mirrors the run: its search forced only when the run forced it.
    if (predict && app.count("--search") == 0)
      search = m.search_trigger == "--search" ? "force" : "auto";
    SimOptions so;
    so.plan = !predict ? plan : (m.plan == "ring" || m.plan == "all") ? m.plan : "auto";
    so.budget_s = parse_budget_s(budget);
    so.max_parallel = predict && max_parallel == 0 ? m.max_parallel
                      : max_parallel == 0          ? 1 << 30
                                                   : max_parallel;
    so.matrix.slow_fraction = slow_fraction > 0 ? slow_fraction : m.slow_fraction;
    so.search = search != "off";
    so.force_search = search == "force";
    so.group = *group;
    if (search_fraction > 0) so.group.fraction = search_fraction;
    // The fit keeps the measured run's sizing; tables use the command's (n x chunk) unless told.
    if (!predict) so.group.policy.fixed_bytes = 0;
    if (search_bytes > 0) so.group.policy.fixed_bytes = static_cast<uint64_t>(search_bytes);
    so.per_pair_s = m.per_wave_s;
    so.node_checks_s = m.node_checks_s;
    if (predict) ns = {m.hosts};
    // A netns world is one bridge: one leaf, unless the fabric's shape is given.
    if (predict && app.count("--nodes-per-leaf") == 0) per_leaf = m.hosts;

    std::printf(
        "measured: %s (%d hosts, plan %s, %zu healthy figures %.3g-%.3g Gbit/s, median "
        "%.3g; one wave of pairs %.2f s, median pair run %.2f s; node checks %.1f s)\n",
        measured.c_str(), m.hosts, m.plan.c_str(), m.healthy_gbit_s.size(),
        *std::min_element(m.healthy_gbit_s.begin(), m.healthy_gbit_s.end()),
        *std::max_element(m.healthy_gbit_s.begin(), m.healthy_gbit_s.end()),
        median(m.healthy_gbit_s), m.per_wave_s, m.median_pair_s, m.node_checks_s);
    std::printf(
        "group model (%s): %.0f bytes a group (measured; 0: n x chunk), alpha %.1f us/step, %.2f s "
        "per group, %.2f s per ring order, agents' start %.3f s per candidate, fraction %.3g\n",
        group_source.c_str(), static_cast<double>(group->policy.fixed_bytes), group->alpha_s * 1e6,
        group->group_overhead_s, group->ring_setup_s, group->agents_start_s_per_node,
        group->fraction);
    std::printf(
        "plan %s, --max-parallel %s, search %s (%.0f bytes a group, 0: n x %llu; fraction %.3g), slow "
        "fraction %.2f; fat tree %d nodes per "
        "leaf, %d spines, %d rail(s); fault factor %.3g, flapping p %.2f\n\n",
        so.plan.c_str(),
        so.max_parallel >= (1 << 30) ? "unbounded" : std::to_string(so.max_parallel).c_str(),
        search.c_str(), static_cast<double>(so.group.policy.fixed_bytes),
        static_cast<unsigned long long>(so.group.policy.chunk_bytes), so.group.fraction, so.matrix.slow_fraction, per_leaf,
        spines, rails, factor, p_slow);
    std::printf(
        "| N | fault | runs | detected | false blame | other blame | wall median | wall "
        "p95 | plan waves | search rounds (median) | search outcomes |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int n : ns)
      for (FaultKind k : kinds) {
        const int leaves = (n + per_leaf - 1) / per_leaf;
        if (k == FaultKind::kBadSpinePort && leaves < 2) {
          std::printf("| %d | %s | — | one leaf: no spine path | | | | | | | |\n", n, to_string(k));
          continue;
        }
        const int s = n > 1024 ? seeds_large : seeds;
        Cell c = run_cell(n, k, s, so, m, per_leaf, spines, rails, factor, p_slow, show_false);
        FabricTopology t = fat_tree(n, per_leaf, spines, rails);
        const int waves =
            schedule_cost(plan_rounds(so, t).plan.rounds, n, 1, so.max_parallel).waves;
        std::printf(
            "| %d | %s | %d | %s | %s | %s | %s | %s | %d | %s | %s |\n", n, to_string(k), c.runs,
            k == FaultKind::kNone ? "—" : pct(c.detected, c.runs).c_str(),
            pct(c.false_blame, c.runs).c_str(), pct(c.other_blame, c.runs).c_str(),
            secs(quantile(c.wall, 0.5)).c_str(), secs(quantile(c.wall, 0.95)).c_str(), waves,
            c.rounds.empty() ? "—"
                             : std::to_string(static_cast<int>(quantile(c.rounds, 0.5))).c_str(),
            outcomes(c).c_str());
        std::fflush(stdout);
      }
    if (predict) {
      std::printf(
          "\nthe real run: wall %.1f s (node checks %.1f, pair rounds %.1f, re-tests %.1f, "
          "search %.1f s in %d rounds, %s%s%s); verdict:",
          m.wall_s, m.node_checks_s, m.per_wave_s * m.schedule_waves, m.retest_s, m.search_s,
          m.search_rounds, m.search_ran ? "outcome " : "no search", m.search_outcome.c_str(),
          m.search_link.empty() ? "" : (" " + m.search_link).c_str());
      if (m.verdict.empty()) std::printf(" no warn or fail finding");
      for (const auto& v : m.verdict) std::printf("\n  %s", v.c_str());
      std::printf("\n");
    }
  } catch (const UsageError& e) {
    std::cerr << "fabkit-fabric-sim: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "fabkit-fabric-sim: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
