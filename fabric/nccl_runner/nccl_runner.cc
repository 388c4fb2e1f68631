#include "fabric/nccl_runner/nccl_runner.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "common/environment.h"
#include "common/errors.h"
#include "common/helper_program.h"
#include "common/json_read.h"
#include "fabric/allreduce/session_socket.h"
#include "fabric/allreduce/sweep.h"
#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_runner/child_protocol.h"
#include "fabric/nccl_runner/gpu_choice.h"
#include "fabric/nccl_runner/runner_child.h"
#include "fabric/wire/frame.h"

namespace fabkit::fabric {
namespace {

constexpr size_t kMaxFrameBytes = 4096;


// Agent <-> agent: one frame (wire/frame.h) each way, a request {"op":"nccl_ready","line":...}
// carrying this side's child line (READY/UNAVAILABLE/FAILED). The line is cut to fit the cap, so
// a long failure reason still arrives (shortened) instead of as an oversized frame.
constexpr char kReadyOp[] = "nccl_ready";

void send_readiness(int fd, std::string line, int timeout_ms) {
  std::string payload;
  for (;;) {
    payload = Json{{"op", kReadyOp}, {"line", line}}.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (payload.size() <= kMaxFrameBytes) break;
    line.resize(line.size() / 2);  // JSON escapes may grow it: halve until it fits
  }
  send_frame(fd, {wire::FrameType::kRequest, payload}, wire::deadline_in_ms(timeout_ms),
             "sending the NCCL readiness to the peer agent");
}

std::string recv_readiness(int fd, int timeout_ms) {
  wire::Frame f = recv_frame(fd, kMaxFrameBytes, wire::deadline_in_ms(timeout_ms), "waiting for the peer agent's NCCL readiness");
  Json j;
  try {
    j = parse_json(f.payload, "the peer agent's NCCL readiness");
  } catch (const JsonReadError& e) {
    throw PeerError("io_error", e.what());
  }
  if (f.type != wire::FrameType::kRequest || !j.is_object() || j.value("op", "") != kReadyOp || !j.contains("line") ||
      !j["line"].is_string())
    throw PeerError("io_error", std::string("peer agent sent a ") + wire::to_string(f.type) +
                                    " frame that is not {\"op\":\"nccl_ready\",\"line\":...}");
  return j["line"].get<std::string>();
}

TransportRun make_run(const std::string& transport, const std::string& status, const std::string& kind,
                      const std::string& reason) {
  TransportRun run;
  run.transport = transport;
  run.status = status;
  run.reason = reason;
  if (!kind.empty()) run.extra["error"] = kind;
  return run;
}

std::string join_sizes(const std::vector<uint64_t>& sizes) {
  std::string s;
  for (uint64_t b : sizes) s += (s.empty() ? "" : ",") + std::to_string(b);
  return s;
}

}  // namespace

std::string find_nccl_runner(const NcclTransportChoice& choice, std::vector<std::string>* refused) {
  if (!choice.runner_path.empty()) return trusted_helper_path(choice.runner_path, refused);
  return find_helper_program({"fabcheck-nccl-runner", "FABKIT_NCCL_RUNNER"}, self_executable_dir(),
                             refused);
}

std::string nccl_runner_not_found(const std::vector<std::string>& refused) {
  return "fabcheck-nccl-runner not found (this fabcheck was built without NCCL, or the runner was "
         "not installed beside it; set FABKIT_NCCL_RUNNER)" +
         refused_suffix(refused);
}

namespace {

Json net_used(const Json& summary) {
  const auto field = [&](const char* k) { return summary.contains(k) ? summary[k] : Json(); };
  // The plugin: the file NCCL says it loaded, else the plugin's name. A plugin that loaded but did
  // not carry the data (NCCL's own IB or Socket network was used: the plugin failed to start, or
  // found no device) is `loaded_plugin` only, which is the silent fallback this answers.
  Json loaded = field("plugin_path").is_string() ? field("plugin_path") : field("plugin");
  const Json& name = field("network");
  const bool internal = name.is_string() && (name == "IB" || name == "RoCE" || name == "Socket");
  return {{"name", name},
          {"plugin", internal ? Json() : loaded},
          {"plugin_version", internal ? Json() : field("plugin_version")},
          {"loaded_plugin", loaded}};
}

}  // namespace

void judge_transport_used(const std::string& expected, const Json& summary, Json* extra) {
  Json& x = *extra;
  x["expected_network"] = expected;
  const Json& net = summary.contains("network") ? summary["network"] : Json();
  x["nccl_network"] = net;
  x["net"] = net_used(summary);
  x["fallback_evidence"] = Json::array();
  if (!net.is_string()) {
    // No "Using network" line: the run may not have reached transport setup, or NCCL_DEBUG was
    // overridden. Unknown, not a silent pass.
    x["fell_back"] = nullptr;
    x["fallback_evidence"].push_back("the NCCL log names no network (no 'Using network' line)");
    return;
  }
  bool fell_back = net.get<std::string>() != expected;
  x["fell_back"] = fell_back;
  if (fell_back) {
    if (summary.contains("network_evidence") && summary["network_evidence"].is_string())
      x["fallback_evidence"].push_back(summary["network_evidence"]);
    x["fallback_evidence"].push_back("asked for " + expected + ", NCCL used " + net.get<std::string>());
    if (summary.contains("errors"))
      for (const auto& e : summary["errors"]) x["fallback_evidence"].push_back(e.value("text", e.dump()));
  }
}

TransportRun run_nccl_allreduce(const AllreduceSpec& spec, const NcclTransportChoice& choice) {
  std::string transport = nccl_transport_label(choice);
  NcclChildEnv env;
  try {
    validate_spec(spec);
    if (spec.world_size != 2) throw UsageError("NCCL runner: world_size = " + std::to_string(spec.world_size) + " is invalid: the pair runner runs 2 ranks");
    env = nccl_child_env(choice, spec.ifname);
  } catch (const UsageError& e) {
    return make_run(transport, "failed", "invalid_spec", e.what());
  }
  std::vector<std::string> refused;
  std::string runner = find_nccl_runner(choice, &refused);
  if (runner.empty())
    return make_run(transport, "unavailable", "runner_not_built", nccl_runner_not_found(refused));
  // The GPU for this rank: the caller's, else the one nearest the NIC under test.
  Json gpu_pick;
  std::vector<std::string> device_args;
  if (choice.device >= 0) {
    device_args = {"--device", std::to_string(choice.device)};
    gpu_pick = {{"bus_id", nullptr}, {"reason", "CUDA device " + std::to_string(choice.device) + " set by the caller"}};
  } else {
    GpuPick pick = pick_gpu_here(choice.network == "Socket" ? "" : choice.hca, spec.ifname);
    if (!pick.bus_id.empty()) device_args = {"--device-bus-id", pick.bus_id};
    gpu_pick = to_json(pick);
  }
  try {
    // 1. The agents meet first: no child is started for a peer that never shows up.
    auto sizes = effective_sizes(spec);
    HelloInfo mine{static_cast<uint32_t>(spec.rank), 2, fnv1a64(transport + "|" + join_sizes(sizes) + "|" + std::to_string(spec.iters))};
    Fd peer;
    if (spec.rank == 0) {
      Fd listener = listen_on(spec.local_addr, spec.port, spec.ifname);
      peer = accept_peer(listener.get(), spec.token, mine, spec.timeout_ms, nullptr);
    } else {
      peer = connect_peer(spec.peer_addr, spec.port, spec.local_addr, spec.ifname, spec.token, mine, spec.timeout_ms, nullptr);
    }
    set_nonblocking(peer.get());
    // 2. The child: CUDA device check and (rank 0) the unique id, then READY.
    std::vector<std::string> args = {"--rank", std::to_string(spec.rank), "--world-size", "2", "--sizes", join_sizes(sizes),
                                     "--iters", std::to_string(spec.iters), "--warmup", std::to_string(spec.warmup_iters),
                                     "--timeout-ms", std::to_string(spec.timeout_ms)};
    args.insert(args.end(), device_args.begin(), device_args.end());
    RunnerChild child(runner, args, merge_child_env(Environment::from_process().vars(), env));
    bool eof = false;
    std::string first = child.next_line(spec.timeout_ms, &eof);
    ChildLine mine_line = eof ? ChildLine{ChildLineKind::kFailed, "child_died", "exited before READY"} : parse_child_line(first);
    // 3. Exchange readiness; both READY -> GO with rank 0's id, else STOP and say why.
    send_readiness(peer.get(), eof ? "FAILED child_died exited before READY" : first, spec.timeout_ms);
    ChildLine theirs = parse_child_line(recv_readiness(peer.get(), spec.timeout_ms));
    TransportRun run;
    run.transport = transport;
    run.extra["env"] = Json(env.set);
    run.extra["runner"] = runner;
    run.extra["gpu_pick"] = gpu_pick;
    auto finish_log = [&](TransportRun& r) {
      r.extra["child_exit"] = child.wait_exit(spec.timeout_ms);
      nccl_log::NcclLogSummary summary = nccl_log::parse_nccl_log(child.log());
      r.extra["nccl_log"] = nccl_log::to_json(summary);
      r.extra["log_truncated"] = child.log_truncated();
      std::string expected = choice.network;
      judge_transport_used(expected, r.extra["nccl_log"], &r.extra);
      Json findings = Json::array();
      for (const auto& f : nccl_log::judge_nccl_log(summary, expected)) findings.push_back(to_json(f));
      r.extra["findings"] = findings;
    };
    if (mine_line.kind != ChildLineKind::kReady || theirs.kind != ChildLineKind::kReady) {
      try {
        child.send_line("STOP", spec.timeout_ms);
      } catch (const PeerError&) {
        // A child that reported UNAVAILABLE/FAILED has usually exited already: nothing to stop.
      }
      child.wait_exit(spec.timeout_ms);
      const ChildLine& bad = mine_line.kind != ChildLineKind::kReady ? mine_line : theirs;
      std::string who = mine_line.kind != ChildLineKind::kReady ? "this node" : "peer node";
      bool unavailable = bad.kind == ChildLineKind::kUnavailable;
      TransportRun r = make_run(transport, unavailable ? "unavailable" : "failed", unavailable ? "unavailable" : (bad.word.empty() ? "child_protocol" : bad.word),
                                who + ": " + bad.text);
      r.extra["env"] = Json(env.set);
      r.extra["gpu_pick"] = gpu_pick;
      return r;
    }
    std::string id = spec.rank == 0 ? mine_line.word : theirs.word;
    child.send_line("GO " + id, spec.timeout_ms);
    // 4. The sweep: every PROGRESS line restarts the timeout (one size may take seconds on Socket)
    // and is passed on (the agent's progress notes).
    size_t sizes_done = 0;
    for (;;) {
      std::string line = child.next_line(spec.timeout_ms, &eof);
      if (eof) {
        TransportRun r = make_run(transport, "failed", "child_died", "the NCCL runner child exited without a result");
        r.extra["env"] = Json(env.set);
        r.extra["gpu_pick"] = gpu_pick;
        finish_log(r);
        return r;
      }
      ChildLine l = parse_child_line(line);
      if (l.kind == ChildLineKind::kProgress) {
        if (spec.on_size_done) spec.on_size_done(std::min(++sizes_done, sizes.size()), sizes.size());
        continue;
      }
      if (l.kind == ChildLineKind::kFailed || l.kind == ChildLineKind::kInvalid) {
        TransportRun r = make_run(transport, "failed", l.kind == ChildLineKind::kFailed ? l.word : "child_protocol", l.text);
        r.extra["env"] = Json(env.set);
        r.extra["gpu_pick"] = gpu_pick;
        finish_log(r);
        return r;
      }
      if (l.kind == ChildLineKind::kResult) {
        Json result;
        try {
          result = parse_json(l.text, "the NCCL runner child's RESULT");
        } catch (const JsonReadError& e) {
          throw PeerError("child_protocol", e.what());
        }
        if (!result.is_object() || !result.contains("sizes") || !result["sizes"].is_array())
          throw PeerError("child_protocol", "the NCCL runner child's RESULT is not {\"sizes\":[...]}");
        bool ok = true;
        for (const auto& s : result["sizes"]) {
          SizeResult sr{s.value("bytes", uint64_t{0}), s.value("time_us", 0.0), s.value("algbw_gbps", 0.0),
                        s.value("busbw_gbps", 0.0), s.value("correct", false)};
          ok = ok && sr.correct;
          run.sizes.push_back(sr);
        }
        run.extra["device"] = result.value("device", Json());
        run.extra["nccl_version"] = result.value("nccl_version", Json());
        run.status = ok ? "ok" : "failed";
        if (!ok) {
          run.reason = "result check failed for at least one size";
          run.extra["error"] = "wrong_result";
        }
        finish_log(run);
        return run;
      }
    }
  } catch (const PeerError& e) {
    TransportRun r = make_run(transport, "failed", e.kind(), e.what());
    r.extra["env"] = Json(env.set);
    return r;
  }
}

}  // namespace fabkit::fabric
