// The steps the 2-host pair controller and the N-host group controller share: named, bounded
// steps recorded as StepRecords, the agents' facts, the per-interface-pair measurement between two
// agents and the merge of every rank's all-reduce document.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/json.h"
#include "fabric/pair/agent_client.h"
#include "fabric/pair/answer_field.h"
#include "fabric/pair/pair_controller.h"
#include "fabric/pair/pair_facts.h"
#include "fabric/pair/session_peers.h"

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

// answer_field (answer_field.h) for an answer a step cannot go on without: a field of the wrong
// type fails the step on `host` (pair.agent_error), naming the request and the field.
template <typename T>
T step_answer_field(const std::string& host, const std::string& op, const Json& m, const char* key,
                    T otherwise) {
  try {
    return answer_field(m, key, otherwise);
  } catch (const std::invalid_argument& e) {
    throw StepError(host, "pair.agent_error", "unusable " + op + " answer: " + e.what());
  }
}
// The TCP port a free_port or tcp_serve answer names: 1..65535, else a StepError as above.
uint16_t answer_port(const std::string& host, const std::string& op, const Json& m);

// pair.agent_error is an answer from a live agent; anything else means the session is gone.
bool fatal(const StepError& e);
// The same for a recorded step: failed with a code other than pair.agent_error.
bool ends_session(const StepRecord& s);
// What a step skipped after `s` ended the session says: "not run: the agent on B was lost in
// step 'allreduce:gloo-ibverbs' (pair.agent_lost: ... killed by SIGABRT ...)", the error cut to
// a few hundred bytes (the failed step itself carries all of it).
std::string lost_agent_note(const StepRecord& s);
// "step 'launch' failed on B: ..." for the first failed step; "" when none failed.
std::string first_failure(const std::vector<StepRecord>& steps);
// The bound the agents put on one transport's whole sweep (their runner child is killed after
// it): the controller's own wait (transport_timeout_ms) less a margin for the answer's way back.
int sweep_timeout_ms(const PairOptions& o);
launch::RemoteCommand agent_command(const PairOptions& o, const std::string& host);
AgentFacts agent_facts(const std::string& host, const Json& hello, const Json& facts);
// The session's address book (session_peers.h): resolves the host names, vouches for each
// agent's control address, and sends every agent the addresses it may contact (set_peers).
// Throws StepError naming the host whose list would exceed what an agent accepts.
SessionPeers send_session_peers(const std::vector<AgentClient*>& agents,
                                const std::vector<AgentFacts>& facts, const PairOptions& o);
// The bound on an agent's silence while it works on a request (AgentClient::set_liveness_ms):
// --timeout-ms, and at least 3 heartbeat intervals.
int liveness_bound_ms(const PairOptions& o);
// Every rank's answer to a request sent to all of them (in rank order). An agent that is lost,
// stopped or silent does not end the wait for the others: its document becomes
// {"status":"failed","reason":...} and its StepError is kept in `fatal` (the first one), so the
// caller records what the other ranks reported (often the first sign of what went wrong) before
// it ends the step with throw_with_other_ranks.
struct RankAnswers {
  std::vector<Json> docs;
  std::optional<StepError> fatal;
};
RankAnswers receive_ranks(const std::vector<AgentClient*>& ranks, int timeout_ms,
                          const std::function<void(uint64_t, uint64_t)>& rank0_progress = {});
// Rethrows `fatal` with what the other ranks reported appended to its message.
[[noreturn]] void throw_with_other_ranks(const StepError& fatal,
                                         const std::vector<AgentClient*>& ranks,
                                         const std::vector<Json>& docs);

// One LinkResult from A's tcp_measure answer m for the pair (a, b). A malformed answer (rtt.count
// not pings_asked, a histogram that fails its checks) makes the link "error", naming the field.
LinkResult link_from_json(const Candidate& a, const Candidate& b, const Json& m, int pings_asked);
// B serves on each of its candidates, A measures from each of its own: f.links (f.a, f.b set).
// Only pairs whose ends each may contact the other (a_targets: what A may contact; b_targets:
// what B may) are measured: the link chosen must carry connections both ways.
void measure_links(PairFacts& f, AgentClient& A, AgentClient& B, const PairOptions& o,
                   const std::set<std::string>& a_targets, const std::set<std::string>& b_targets);
// "8 B", "4 KiB", "64 MiB": the all-reduce size a progress label names.
std::string size_text(uint64_t bytes);
// One TransportResult from every rank's runner document (rank order); sizes are rank 0's timings,
// correct only when every rank checked its result.
TransportResult combine_ranks(const std::string& name, const std::vector<Json>& ranks);

}  // namespace fabkit::pair
