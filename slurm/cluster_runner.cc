#include "slurm/cluster_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <system_error>
#include <thread>

#include <sys/wait.h>

#include "common/errors.h"
#include "common/json_read.h"
#include "fabric/launch/child_process.h"
#include "fabric/launch/ship.h"
#include "fabric/wire/wire_error.h"
#include "slurm/cluster_judge.h"
#include "slurm/search_runner.h"

namespace fabkit::slurm {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

NodeRun run_node(const ClusterOptions& o, const std::string& host) {
  NodeRun r;
  r.host = host;
  auto t0 = Clock::now();
  try {
    launch::ChildOptions co;
    auto cmd = launch::remote_fabcheck(o.launcher, o.agent_path, o.pair.ship.get(), host,
                                       {"node", "--json"});
    co.argv = cmd.argv;
    co.stdin_payload = cmd.stdin_payload;  // --ship over ssh or a template: the binary
    co.stdin_payload_timeout_ms = std::max(o.node_timeout_ms, 60000);
    co.search_path = true;
    co.own_process_group = true;
    co.stdout_is_log = true;  // the report is one JSON document, read whole at exit
    co.max_log_bytes = 32u << 20;
    launch::ChildProcess child(co);
    r.exit = child.wait_exit(wire::deadline_in_ms(o.node_timeout_ms));
    const int st = child.exit_status();
    const bool exited = WIFEXITED(st);
    const int code = exited ? WEXITSTATUS(st) : -1;
    // 0 clean and 1 findings both carry a report; anything else is the tool failing there.
    const bool ship_refused = code == launch::kShipExitChecksum || code == launch::kShipExitFailed;
    if (!child.exited() || !exited || (code != 0 && code != 1 && !ship_refused)) {
      std::string tail = child.stderr_tail(600);
      r.error = "`fabcheck node --json` on " + host + " ended with " + r.exit +
                (ms_since(t0) >= o.node_timeout_ms
                     ? " at the " + std::to_string(o.node_timeout_ms) + " ms timeout"
                     : "") +
                (tail.empty() ? "" : "; stderr: " + tail);
    } else {
      Json j;
      std::string why;
      try {
        j = parse_json(child.log(), "its output");
      } catch (const JsonReadError& e) {
        why = std::string(": ") + e.what();
      }
      if (auto ship = launch::parse_ship_failure(j)) {
        r.error = ship->code + " on " + host + ": " + ship->message;
      } else if (!j.is_object() || !j.contains("kind") || j["kind"] != "node") {
        r.error = "`fabcheck node --json` on " + host + " printed no node report (" +
                  std::to_string(child.log().size()) + " bytes of output)" + why;
      } else {
        r.ok = true;
        r.report = std::move(j);
      }
    }
  } catch (const launch::ShipError& e) {
    r.error = e.code() + ": " + e.what();
  } catch (const SysErrorException& e) {
    r.error = std::string("could not start the launcher: ") + e.what();
  } catch (const wire::WireError& e) {
    r.error = std::string("reading the node report: ") + e.what();
  } catch (const std::exception& e) {  // a worker thread must not throw: std::terminate
    r.error = std::string("internal error in the node check: ") + e.what();
  }
  r.elapsed_ms = ms_since(t0);
  return r;
}

// One round of disjoint pairs, all at once (up to max_parallel).
// progress: one unit per pair run that finished.
std::vector<PairRun> run_round(const ClusterOptions& o, const std::vector<NodePair>& pairs,
                               int round, ProgressScope& progress) {
  std::vector<PairRun> runs(pairs.size());
  run_parallel(pairs.size(), o.max_parallel, [&](size_t i) {
    auto tp = Clock::now();
    pair::PairOptions po = o.pair;
    po.host_a = o.hosts[pairs[i].a];
    po.host_b = o.hosts[pairs[i].b];
    po.progress = nullptr;  // the runs of a round are parallel: one line for the round instead
    runs[i].a = pairs[i].a;
    runs[i].b = pairs[i].b;
    runs[i].round = round;
    try {
      runs[i].facts = pair::run_pair(po);
    } catch (const std::exception& e) {
      // The controller records its own failures as steps; anything else escaping it is named
      // the same way, since a worker thread must not throw (std::terminate).
      runs[i].facts.host_a = po.host_a;
      runs[i].facts.host_b = po.host_b;
      runs[i].facts.steps.push_back({"run", "", "failed", "cluster.internal", e.what(), 0});
    }
    // The cluster judges a pair from its measurements; both agents' node reports (the node checks
    // brought their own) are ~90 KiB each once parsed: a 4096-node ring would keep 8192 of them
    // (~0.7 GiB), `--pairs all` at 1024 nodes 1,047,552 (docs/cluster.md, "The controller at
    // scale").
    runs[i].facts.a.report = Json();
    runs[i].facts.b.report = Json();
    runs[i].elapsed_ms = ms_since(tp);
    progress.advance(1);
  });
  return runs;
}

}  // namespace

void run_parallel(size_t n, int parallel, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> threads;
  size_t k = std::min(n, static_cast<size_t>(std::max(1, parallel)));
  threads.reserve(k);
  for (size_t t = 0; t < k; ++t) {
    try {
      threads.emplace_back(worker);
    } catch (const std::system_error&) {
      // EAGAIN: the host ran out of threads (RLIMIT_NPROC, threads-max) past the budget's
      // estimate. The threads already started share the work; none at all: this one does it.
      break;
    }
  }
  if (threads.empty()) worker();
  for (auto& t : threads) t.join();
}

ClusterFacts run_cluster(const ClusterOptions& o) {
  ClusterFacts f;
  f.hosts = o.hosts;
  f.launcher = o.launcher_text;
  f.plan = o.plan;
  f.max_parallel = o.max_parallel;
  launch::install_stop_handler();

  auto t0 = Clock::now();
  f.nodes.resize(o.hosts.size());
  {
    ProgressScope progress(o.progress, "cluster: node checks", o.hosts.size());
    const int node_parallel = o.max_parallel_nodes > 0 ? o.max_parallel_nodes : o.max_parallel;
    run_parallel(o.hosts.size(), node_parallel, [&](size_t i) {
      f.nodes[i] = run_node(o, o.hosts[i]);
      progress.advance(1);
    });
  }
  f.nodes_ms = ms_since(t0);
  if (o.skip_pairs) return f;

  f.rounds = !o.rounds.empty() ? o.rounds
                               : make_schedule(o.plan, static_cast<int>(o.hosts.size()));
  auto t1 = Clock::now();
  {
    // One bar over every pair of every round: its ETA is the matrix's.
    size_t total = 0;
    for (const auto& r : f.rounds) total += r.pairs.size();
    ProgressScope progress(o.progress, "", total);
    for (size_t r = 0; r < f.rounds.size(); ++r) {
      progress.advance(0, "cluster: pair round " + std::to_string(r + 1) + "/" +
                              std::to_string(f.rounds.size()));
      auto tr = Clock::now();
      for (auto& x : run_round(o, f.rounds[r].pairs, static_cast<int>(r), progress))
        f.pairs.push_back(std::move(x));
      f.round_ms.push_back(ms_since(tr));
    }
  }
  f.pairs_ms = ms_since(t1);
  if (o.retest) retest_flagged(o, f);
  run_search(o, f);
  return f;
}

void retest_flagged(const ClusterOptions& o, ClusterFacts& f) {
  // Judge once to find what to measure again (the report judges again with the re-tests).
  std::vector<PairMeasurement> ms;
  for (const auto& p : f.pairs) ms.push_back(measurement_from_pair(p));
  MatrixVerdict v = judge_matrix(o.hosts, ms, o.matrix);
  std::vector<NodePair> flagged;
  for (const auto& l : v.links)
    if (l.state == "slow" || l.state == "failed") flagged.push_back({l.a, l.b});
  auto t2 = Clock::now();
  auto rounds = disjoint_rounds(flagged);
  ProgressScope progress(o.progress, "", flagged.size());
  for (size_t r = 0; r < rounds.size(); ++r) {
    progress.advance(0, "cluster: re-test round " + std::to_string(r + 1) + "/" +
                            std::to_string(rounds.size()) + " of the flagged links");
    for (auto& x : run_round(o, rounds[r].pairs, -1 - static_cast<int>(r), progress))
      f.retests.push_back(std::move(x));
  }
  f.retest_ms = ms_since(t2);
}

}  // namespace fabkit::slurm
