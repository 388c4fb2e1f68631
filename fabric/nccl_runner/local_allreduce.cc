#include "fabric/nccl_runner/local_allreduce.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "common/environment.h"
#include "common/json_read.h"
#include "fabric/nccl_runner/child_protocol.h"
#include "fabric/nccl_runner/nccl_env.h"
#include "fabric/nccl_runner/nccl_runner.h"
#include "fabric/nccl_runner/runner_child.h"

namespace fabkit::fabric {
namespace {

using Clock = std::chrono::steady_clock;

// Each rank is read in short slices in turn, so that every child's log pipe is drained while the
// others are waited for (a rank blocked on a full log would stall the collective for all).
constexpr int kSliceMs = 20;

struct Rank {
  std::unique_ptr<RunnerChild> child;
  ChildLine first;  // READY / UNAVAILABLE / FAILED (kind kInvalid until it came)
  ChildLine last;   // RESULT / FAILED (kind kInvalid until it came)
  bool has_first = false, has_last = false;
  std::string exit;
};

// How long a failed run waits for a rank that said it is ending to exit: NCCL's teardown after an
// error writes its WARNs within milliseconds; a rank still there after this is killed like the rest.
constexpr int kEndingRankGraceMs = 2000;

bool said_it_ends(const Rank& r) {
  auto ends = [](const ChildLine& l) {
    return l.kind == ChildLineKind::kFailed || l.kind == ChildLineKind::kUnavailable;
  };
  return (r.has_first && ends(r.first)) || (r.has_last && ends(r.last));
}

int ms_left(Clock::time_point deadline) {
  return static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
}

// One line of a rank if it has one within a slice; *got=false when none came.
ChildLine poll_rank(Rank& r, bool* got) {
  *got = false;
  bool eof = false;
  std::string line;
  try {
    line = r.child->next_line(kSliceMs, &eof);
  } catch (const PeerError& e) {
    if (e.kind() == "child_timeout") return {};
    *got = true;
    return {ChildLineKind::kInvalid, e.kind(), e.what()};
  }
  *got = true;
  if (eof) return {ChildLineKind::kFailed, "child_died", "exited without answering"};
  return parse_child_line(line);
}

std::string tail_of(const std::string& log) {
  std::string t = log.size() > 800 ? log.substr(log.size() - 800) : log;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  std::string out;
  for (char c : t)
    out += c == '\n' ? std::string(" | ") : std::string(1, (c >= 0x20 && c < 0x7f) ? c : '?');
  return out;
}

TransportRun make(const LocalAllreduceSpec& s, const std::string& status, const std::string& error,
                  const std::string& reason) {
  TransportRun run;
  run.transport = s.label;
  run.status = status;
  run.reason = reason;
  run.extra["ranks"] = s.ranks;
  if (!error.empty()) run.extra["error"] = error;
  return run;
}

}  // namespace

TransportRun run_local_allreduce(const LocalAllreduceSpec& spec) {
  auto start = Clock::now();
  auto deadline = start + std::chrono::milliseconds(spec.timeout_ms);
  if (spec.ranks < 1 || spec.bytes < sizeof(float) || spec.iters < 1 || spec.warmup < 0 ||
      spec.timeout_ms < 1)
    return make(spec, "failed", "invalid_spec",
                "local all-reduce: ranks " + std::to_string(spec.ranks) + ", bytes " +
                    std::to_string(spec.bytes) + ", iters " + std::to_string(spec.iters) +
                    ": needs ranks >= 1, bytes >= 4, iters >= 1");
  NcclTransportChoice choice;
  choice.runner_path = spec.runner_path;
  std::vector<std::string> refused;
  std::string runner = find_nccl_runner(choice, &refused);
  if (runner.empty())
    return make(spec, "unavailable", "runner_not_built", nccl_runner_not_found(refused));
  // NCCL's log goes to our pipe (NCCL_DEBUG_FILE would divert it; NCCL_COMM_ID would replace the id
  // we hand over); WARN keeps eight ranks' logs short while still naming what failed.
  NcclChildEnv env;
  env.set = spec.env_set;
  env.set.emplace("NCCL_DEBUG", "WARN");
  env.unset = spec.env_unset;
  env.unset.push_back("NCCL_DEBUG_FILE");
  env.unset.push_back("NCCL_COMM_ID");
  std::vector<std::string> envp = merge_child_env(Environment::from_process().vars(), env);
  int step_timeout_ms = std::max(1, spec.timeout_ms);

  std::vector<Rank> ranks(static_cast<size_t>(spec.ranks));
  // culprit: the rank whose log explains a failure (-1: the first rank that logged anything).
  auto finish = [&](TransportRun run, int culprit = -1) {
    // Every rank still running is killed here (SIGKILL, reaped): nothing outlives the run. A rank
    // that said FAILED/UNAVAILABLE (or closed fd 3) is ending on its own and may still be writing
    // the log lines that explain it (NCCL's teardown WARNs): it gets a short grace first.
    Json exits = Json::array();
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i].child)
        exits.push_back(ranks[i].child->wait_exit(
            run.status == "ok"  ? std::max(0, std::min(ms_left(deadline), 10000))
            : said_it_ends(ranks[i]) ? kEndingRankGraceMs
                                     : 0));
    std::string logs;
    for (size_t i = 0; run.status != "ok" && i < ranks.size() && logs.empty(); ++i) {
      size_t k = culprit >= 0 && i == 0 ? static_cast<size_t>(culprit) : i;
      if (k < ranks.size() && ranks[k].child && !ranks[k].child->log().empty())
        logs = "rank " + std::to_string(k) + ": " + tail_of(ranks[k].child->log());
    }
    run.extra["child_exits"] = exits;
    run.extra["runner"] = runner;
    run.extra["env"] = Json(env.set);
    run.extra["elapsed_ms"] =
        std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (!logs.empty()) run.extra["log_tail"] = logs;
    return run;
  };
  try {
    for (int i = 0; i < spec.ranks; ++i)
      ranks[static_cast<size_t>(i)].child = std::make_unique<RunnerChild>(
          runner,
          std::vector<std::string>{
              "--rank", std::to_string(i), "--world-size", std::to_string(spec.ranks), "--sizes",
              std::to_string(spec.bytes), "--iters", std::to_string(spec.iters), "--warmup",
              std::to_string(spec.warmup), "--timeout-ms", std::to_string(step_timeout_ms),
              "--device", std::to_string(i)},
          envp);
  } catch (const PeerError& e) {
    return finish(make(spec, "failed", e.kind(), e.what()));
  }

  // 1. Every rank's first line: READY (rank 0 with the unique id), or why not.
  for (;;) {
    bool all = true;
    for (auto& r : ranks) {
      if (r.has_first) continue;
      bool got = false;
      ChildLine l = poll_rank(r, &got);
      if (got) {
        r.first = l;
        r.has_first = true;
      } else {
        all = false;
      }
    }
    if (all) break;
    if (Clock::now() >= deadline) {
      std::string waiting;
      for (size_t i = 0; i < ranks.size(); ++i)
        if (!ranks[i].has_first) waiting += (waiting.empty() ? "" : ",") + std::to_string(i);
      return finish(make(spec, "failed", "timeout",
                         "rank(s) " + waiting + " not ready after " +
                             std::to_string(spec.timeout_ms / 1000) +
                             " s (CUDA or NCCL initialisation hung): killed"));
    }
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    const ChildLine& l = ranks[i].first;
    if (l.kind == ChildLineKind::kReady && (i != 0 || l.word != "-")) continue;
    for (auto& r : ranks) {
      try {
        r.child->send_line("STOP", 1000);
      } catch (const PeerError&) {
        // A rank that said UNAVAILABLE/FAILED has exited already: nothing to stop.
      }
    }
    std::string who = "rank " + std::to_string(i) + ": ";
    int culprit = static_cast<int>(i);
    if (l.kind == ChildLineKind::kUnavailable)
      return finish(make(spec, "unavailable", "unavailable", who + l.text), culprit);
    if (l.kind == ChildLineKind::kFailed)
      return finish(make(spec, "failed", l.word.empty() ? "child_protocol" : l.word, who + l.text),
                    culprit);
    if (l.kind == ChildLineKind::kReady)
      return finish(
          make(spec, "failed", "child_protocol", who + "rank 0 sent READY without a unique id"),
          culprit);
    return finish(make(spec, "failed", "child_protocol", who + "expected READY, got: " + l.text),
                  culprit);
  }

  // 2. GO with rank 0's id to every rank, then their results.
  for (size_t i = 0; i < ranks.size(); ++i) {
    try {
      ranks[i].child->send_line("GO " + ranks[0].first.word,
                                std::max(1, std::min(ms_left(deadline), 5000)));
    } catch (const PeerError& e) {
      return finish(make(spec, "failed", e.kind(), "rank " + std::to_string(i) + ": " + e.what()));
    }
  }
  for (;;) {
    bool all = true;
    for (auto& r : ranks) {
      if (r.has_last) continue;
      bool got = false;
      ChildLine l = poll_rank(r, &got);
      if (!got || l.kind == ChildLineKind::kProgress) {
        all = false;
        continue;
      }
      r.last = l;
      r.has_last = true;
    }
    if (all) break;
    if (Clock::now() >= deadline) {
      std::string waiting;
      for (size_t i = 0; i < ranks.size(); ++i)
        if (!ranks[i].has_last) waiting += (waiting.empty() ? "" : ",") + std::to_string(i);
      return finish(make(spec, "failed", "timeout",
                         "rank(s) " + waiting + " had no result after " +
                             std::to_string(spec.timeout_ms / 1000) +
                             " s (a hung GPU, NVLink or peer): killed"));
    }
  }

  // 3. The figures: the slowest rank's, as nccl-tests prints them.
  TransportRun run = make(spec, "ok", "", "");
  SizeResult agg;
  agg.bytes = spec.bytes;
  agg.correct = true;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const ChildLine& l = ranks[i].last;
    std::string who = "rank " + std::to_string(i) + ": ";
    int culprit = static_cast<int>(i);
    if (l.kind == ChildLineKind::kFailed)
      return finish(make(spec, "failed", l.word.empty() ? "child_protocol" : l.word, who + l.text),
                    culprit);
    if (l.kind != ChildLineKind::kResult)
      return finish(make(spec, "failed", "child_protocol", who + "expected RESULT, got: " + l.text),
                    culprit);
    Json result;
    try {
      result = parse_json(l.text, who + "RESULT");
    } catch (const JsonReadError& e) {
      return finish(make(spec, "failed", "child_protocol", e.what()), culprit);
    }
    if (!result.is_object() || !result.contains("sizes") || !result["sizes"].is_array() ||
        result["sizes"].size() != 1 || !result["sizes"][0].is_object())
      return finish(
          make(spec, "failed", "child_protocol", who + "RESULT is not {\"sizes\":[one size]}"),
          culprit);
    const Json& s = result["sizes"][0];
    double t = s.value("time_us", 0.0), alg = s.value("algbw_gbps", 0.0),
           bus = s.value("busbw_gbps", 0.0);
    agg.time_us = std::max(agg.time_us, t);
    agg.algbw_gbps = i == 0 ? alg : std::min(agg.algbw_gbps, alg);
    agg.busbw_gbps = i == 0 ? bus : std::min(agg.busbw_gbps, bus);
    agg.correct = agg.correct && s.value("correct", false);
    if (i == 0) run.extra["nccl_version"] = result.value("nccl_version", Json());
  }
  run.sizes.push_back(agg);
  if (!agg.correct) {
    run.status = "failed";
    run.extra["error"] = "wrong_result";
    run.reason = "the all-reduce's sums were wrong on at least one rank";
  }
  return finish(run);
}

}  // namespace fabkit::fabric
