// The steps the 2-host pair controller and the N-host group controller share: named, bounded
// steps recorded as StepRecords, the agents' facts, the per-interface-pair measurement between two
// agents and the merge of every rank's all-reduce document.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/json.h"
#include "fabric/pair/agent_client.h"
#include "fabric/pair/pair_controller.h"
#include "fabric/pair/pair_facts.h"

namespace fabkit::pair {

// Runs fn as a named step; a StepError becomes a failed StepRecord. Returns success.
template <typename F>
bool step(std::vector<StepRecord>& steps, const std::string& name, const std::string& host,
          F&& fn) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  StepRecord r{name, host, "ok", "", "", 0};
  bool ok = true;
  try {
    fn();
  } catch (const StepError& e) {
    r.status = "failed";
    if (!e.host().empty()) r.host = e.host();  // a multi-host step failed on this one
    r.code = e.code();
    r.error = e.what();
    ok = false;
  }
  r.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  steps.push_back(r);
  return ok;
}
template <typename F>
bool step(PairFacts& f, const std::string& name, const std::string& host, F&& fn) {
  return step(f.steps, name, host, std::forward<F>(fn));
}

// pair.agent_error is an answer from a live agent; anything else means the session is gone.
bool fatal(const StepError& e);
std::vector<std::string> agent_argv(const PairOptions& o, const std::string& host);
AgentFacts agent_facts(const std::string& host, const Json& hello, const Json& facts);
// Every address the agent reported (hello and candidates), IPv4 only, at most 64.
Json peer_addresses(const AgentFacts& other);
// One LinkResult from A's tcp_measure answer m for the pair (a, b). A malformed answer (rtt.count
// not pings_asked, a histogram that fails its checks) makes the link "error", naming the field.
LinkResult link_from_json(const Candidate& a, const Candidate& b, const Json& m, int pings_asked);
// B serves on each of its candidates, A measures from each of its own: f.links (f.a, f.b set).
void measure_links(PairFacts& f, AgentClient& A, AgentClient& B, const PairOptions& o);
// "8 B", "4 KiB", "64 MiB": the all-reduce size a progress label names.
std::string size_text(uint64_t bytes);
// One TransportResult from every rank's runner document (rank order); sizes are rank 0's timings,
// correct only when every rank checked its result.
TransportResult combine_ranks(const std::string& name, const std::vector<Json>& ranks);

}  // namespace fabkit::pair
