#include "fabric/pair/pair_steps.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>

#include "fabric/pair/answer_field.h"
#include "fabric/pair/verdict.h"
#include "fabric/wire/messages.h"

namespace fabkit::pair {

std::string size_text(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  size_t u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) bytes /= 1024, ++u;
  return std::to_string(bytes) + " " + units[u];
}

bool fatal(const StepError& e) { return e.code() != "pair.agent_error"; }

bool ends_session(const StepRecord& s) {
  return s.status == "failed" && !s.code.empty() && s.code != "pair.agent_error";
}

namespace {
std::string cut(const std::string& text, size_t max_bytes) {
  return text.size() <= max_bytes ? text : text.substr(0, max_bytes) + "...";
}
}  // namespace

std::string lost_agent_note(const StepRecord& s) {
  const std::string who = s.host.empty() ? "the session" : "the agent on " + s.host;
  return "not run: " + who + " was lost in step '" + s.step + "' (" + s.code + ": " +
         cut(s.error, 400) + ")";
}

std::string first_failure(const std::vector<StepRecord>& steps) {
  for (const auto& s : steps)
    if (s.status == "failed")
      return "step '" + s.step + "' failed" + (s.host.empty() ? "" : " on " + s.host) + " (" +
             s.code + ": " + cut(s.error, 400) + ")";
  return "";
}

int sweep_timeout_ms(const PairOptions& o) {
  const int margin = std::clamp(o.transport_timeout_ms / 10, 50, 10000);
  return std::max(1, o.transport_timeout_ms - margin);
}

launch::RemoteCommand agent_command(const PairOptions& o, const std::string& host) {
  int idle_ms = std::max(60000, o.transport_timeout_ms + 10000);
  try {
    return launch::remote_fabcheck(
        o.launcher, o.agent_path, o.ship.get(), host,
        {"agent", "--name", host, "--accept-timeout-ms", std::to_string(o.timeout_ms + 5000),
         "--idle-timeout-ms", std::to_string(idle_ms)});
  } catch (const launch::ShipError& e) {
    throw StepError(host, e.code(), e.what());
  }
}

uint16_t answer_port(const std::string& host, const std::string& op, const Json& m) {
  const auto port = step_answer_field(host, op, m, "port", uint64_t{0});
  if (port == 0 || port > 65535)
    throw StepError(host, "pair.agent_error",
                    "unusable " + op + " answer: field 'port' = " + std::to_string(port) +
                        " is not a TCP port 1..65535");
  return static_cast<uint16_t>(port);
}

AgentFacts agent_facts(const std::string& host, const Json& hello, const Json& facts) {
  AgentFacts a;
  a.host = host;
  a.hello = hello;
  try {
    a.report = answer_field(facts, "report", Json());
    if (!a.report.is_null() && !a.report.is_object())
      throw std::invalid_argument("field 'report' is " + a.report.dump().substr(0, 64) +
                                  ", not a node report object");
    const Json ifs = answer_field(facts, "interfaces", Json::object());
    if (!ifs.is_object())
      throw std::invalid_argument("field 'interfaces' is " + ifs.dump().substr(0, 64) +
                                  ", not an object");
    try {
      a.interfaces_source = answer_field(ifs, "source", std::string());
      a.candidates = candidates_from_interfaces(answer_field(ifs, "interfaces", Json::array()));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("interfaces: ") + e.what());
    }
    const Json transports = answer_field(facts, "transports", Json::array());
    if (!transports.is_array())
      throw std::invalid_argument("field 'transports' is " + transports.dump().substr(0, 64) +
                                  ", not a list of names");
    for (size_t i = 0; i < transports.size(); ++i) {
      if (!transports[i].is_string())
        throw std::invalid_argument("transports[" + std::to_string(i) + "] is " +
                                    transports[i].dump().substr(0, 64) + ", not a name");
      a.transports.push_back(transports[i].get<std::string>());
    }
  } catch (const std::invalid_argument& e) {
    throw StepError(host, "pair.agent_error", std::string("unusable facts answer: ") + e.what());
  }
  return a;
}

namespace {

// The round-trip part of an agent's tcp_measure answer. The agent may be hostile or broken: the
// count must be the pings asked for and the histogram must hold exactly those samples
// (histogram_from_json checks its layout and counts); throws std::invalid_argument naming the
// field.
void read_rtt(const Json& m, int pings_asked, LinkResult& l) {
  if (!m.contains("rtt") || !m["rtt"].is_object())
    throw std::invalid_argument("rtt: missing or not an object");
  const Json& rtt = m["rtt"];
  for (const char* k : {"median_us", "p99_us"})
    if (!rtt.contains(k) || !rtt[k].is_number() || rtt[k].get<double>() < 0)
      throw std::invalid_argument(std::string("rtt.") + k + ": must be a non-negative number");
  if (!rtt.contains("count") || !rtt["count"].is_number_integer() ||
      rtt["count"].get<int64_t>() != pings_asked)
    throw std::invalid_argument(
        "rtt.count: " + (rtt.contains("count") ? rtt["count"].dump() : "missing") +
        ", the controller asked for " + std::to_string(pings_asked) + " pings");
  l.rtt_median_us = rtt["median_us"].get<double>();
  l.rtt_p99_us = rtt["p99_us"].get<double>();
  l.pings = pings_asked;
  if (rtt.contains("histogram"))
    l.rtt_histogram = histogram_from_json(rtt["histogram"], "rtt.histogram", pings_asked);
}

// The sizes of rank 0's answer, each checked against the other ranks' correctness flags.
std::vector<SizeRow> combine_sizes(const std::vector<Json>& ranks) {
  std::vector<SizeRow> rows;
  const Json sizes = answer_field(ranks[0], "sizes", Json::array());
  if (!sizes.is_array()) throw std::invalid_argument("field 'sizes' is not an array");
  for (const auto& s : sizes) {
    SizeRow row;
    row.bytes = answer_field(s, "bytes", uint64_t{0});
    row.time_us = answer_field(s, "time_us", 0.0);
    row.best_time_us = answer_field(s, "best_time_us", 0.0);
    row.algbw_gbps = answer_field(s, "algbw_gbps", 0.0);
    row.busbw_gbps = answer_field(s, "busbw_gbps", 0.0);
    row.correct = answer_field(s, "correct", false);
    for (size_t i = 1; i < ranks.size(); ++i) {
      bool ci = false;
      const Json other = answer_field(ranks[i], "sizes", Json::array());
      if (!other.is_array()) throw std::invalid_argument("field 'sizes' is not an array");
      for (const auto& o : other)
        if (answer_field(o, "bytes", uint64_t{0}) == row.bytes)
          ci = answer_field(o, "correct", false);
      row.correct = row.correct && ci;
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

LinkResult link_from_json(const Candidate& a, const Candidate& b, const Json& m, int pings_asked) {
  LinkResult l;
  l.a = a;
  l.b = b;
  l.raw = m;
  try {
    l.status = answer_field(m, "status", std::string("error"));
    l.error = answer_field(m, "error", std::string());
    if (l.status != "open") return l;
    l.connect_time_us = answer_field(m, "connect_time_us", 0.0);
    read_rtt(m, pings_asked, l);
    l.single_stream_gbit_s = answer_field(m, "single_stream_gbit_s", 0.0);
    l.streams = answer_field(m, "streams", 0);
    l.multi_stream_gbit_s = answer_field(m, "multi_stream_gbit_s", 0.0);
  } catch (const std::invalid_argument& e) {
    // A measurement that does not add up is not a measurement: the link is not chosen.
    l.status = "error";
    l.error = "the agent's tcp_measure answer from " + a.addr + " is malformed: " + e.what();
    l.rtt_histogram.reset();
  }
  return l;
}

TransportResult combine_ranks(const std::string& name, const std::vector<Json>& ranks) {
  TransportResult t;
  t.transport = name;
  t.ranks = Json::array();
  for (const Json& r : ranks) t.ranks.push_back(r);  // kept as sent, for the JSON's ranks[]
  bool all_ok = !ranks.empty(), any_unavailable = false;
  try {
    for (size_t i = 0; i < ranks.size(); ++i) {
      const Json& r = ranks[i];
      const std::string s = answer_field(r, "status", std::string("failed"));
      all_ok = all_ok && s == "ok";
      any_unavailable = any_unavailable || s == "unavailable";
      const std::string reason = answer_field(r, "reason", std::string());
      if (!reason.empty())
        t.reason += (t.reason.empty() ? "" : "; ") + ("rank " + std::to_string(i) + ": ") + reason;
    }
    t.status = all_ok ? "ok" : any_unavailable ? "unavailable" : "failed";
    if (!ranks.empty()) t.sizes = combine_sizes(ranks);
  } catch (const std::invalid_argument& e) {
    // A rank's answer of the wrong shape fails the transport by name; its figures are not used.
    t.status = "failed";
    t.sizes.clear();
    t.reason = "an agent's " + name + " answer is malformed: " + e.what();
  }
  return t;
}

SessionPeers send_session_peers(const std::vector<AgentClient*>& agents,
                                const std::vector<AgentFacts>& facts, const PairOptions& o) {
  std::vector<std::string> names;
  for (const auto& f : facts) names.push_back(f.host);
  const auto resolved = resolve_ipv4(names, std::min(o.timeout_ms, 2000));
  std::vector<HostAddresses> hosts;
  for (size_t i = 0; i < agents.size(); ++i)
    hosts.push_back(host_addresses(facts[i], resolved[i], agents[i]->control_addr()));
  SessionPeers peers = admit_peers(hosts);
  for (size_t i = 0; i < agents.size(); ++i) {
    const auto& allowed = peers.allowed[i];
    if (allowed.empty())
      throw StepError(
          facts[i].host, "pair.agent_error",
          "the controller vouches for no address of the other agents that this one could contact");
    if (allowed.size() > wire::kMaxPeerAddresses)
      throw StepError(facts[i].host, "pair.agent_error",
                      std::to_string(allowed.size()) + " peer addresses, more than the " +
                          std::to_string(wire::kMaxPeerAddresses) + " an agent accepts");
    agents[i]->call("set_peers", {{"addresses", Json(allowed)}}, o.timeout_ms);
  }
  return peers;
}

RankAnswers receive_ranks(const std::vector<AgentClient*>& ranks, int timeout_ms,
                          const std::function<void(uint64_t, uint64_t)>& rank0_progress) {
  RankAnswers out;
  for (size_t r = 0; r < ranks.size(); ++r) {
    try {
      out.docs.push_back(ranks[r]->receive(timeout_ms, r == 0 ? rank0_progress : nullptr));
    } catch (const StepError& e) {
      out.docs.push_back({{"status", "failed"}, {"reason", e.what()}});
      if (fatal(e) && !out.fatal) out.fatal = e;
    }
  }
  return out;
}

void throw_with_other_ranks(const StepError& e, const std::vector<AgentClient*>& ranks,
                            const std::vector<Json>& docs) {
  std::string msg = e.what();
  for (size_t r = 0; r < ranks.size() && r < docs.size(); ++r) {
    if (ranks[r]->host() == e.host() || !docs[r].is_object()) continue;
    auto reason = docs[r].find("reason");
    if (reason != docs[r].end() && reason->is_string() && !reason->get<std::string>().empty())
      msg += "; rank " + std::to_string(r) + " (" + ranks[r]->host() +
             ") had reported: " + reason->get<std::string>();
  }
  throw StepError(e.host(), e.code(), msg);
}

int liveness_bound_ms(const PairOptions& o) {
  return std::max(o.timeout_ms, 3 * wire::kHeartbeatIntervalMs);
}

void measure_links(PairFacts& f, AgentClient& A, AgentClient& B, const PairOptions& o,
                   const std::set<std::string>& a_targets, const std::set<std::string>& b_targets) {
  // Candidates the other side may contact (session_peers.h); the rest were refused and reported.
  std::vector<Candidate> as, bs;
  for (const auto& c : f.a.candidates)
    if (b_targets.count(c.addr)) as.push_back(c);
  for (const auto& c : f.b.candidates)
    if (a_targets.count(c.addr)) bs.push_back(c);
  // B serves on each of its candidate addresses; A measures from each of its own.
  std::vector<std::pair<int, uint16_t>> servers;  // per B candidate: server id, port
  for (const auto& cb : bs) {
    try {
      Json r = B.call("tcp_serve", {{"addr", cb.addr}, {"ifname", cb.ifname}}, o.timeout_ms);
      servers.emplace_back(step_answer_field(B.host(), "tcp_serve", r, "server_id", 0),
                           answer_port(B.host(), "tcp_serve", r));
    } catch (const StepError& e) {
      if (fatal(e)) throw;
      servers.emplace_back(0, 0);
    }
  }
  // A healthy connect takes well under a millisecond on a cluster network; a second is generous
  // and keeps dead decoy pairs (ARP that nobody answers) from dominating the run.
  int connect_ms = std::min(o.timeout_ms, 1000);
  int measure_ms = o.timeout_ms + 2 * o.bandwidth_ms + 10000;
  ProgressScope progress(o.progress, "", as.size() * bs.size());
  for (const auto& ca : as) {
    for (size_t j = 0; j < bs.size(); ++j) {
      const auto& cb = bs[j];
      progress.advance(0, "pair " + f.a.host + "->" + f.b.host + ": tcp rtt and bandwidth " +
                              ca.ifname + "->" + cb.ifname);
      Json m;
      if (servers[j].first == 0) {
        m = {{"status", "error"}, {"error", "the test server on " + cb.addr + " could not start"}};
      } else {
        try {
          m = A.call("tcp_measure",
                     {{"peer_addr", cb.addr},
                      {"port", servers[j].second},
                      {"local_addr", ca.addr},
                      {"local_ifname", ca.ifname},
                      {"pings", o.pings},
                      {"streams", o.streams},
                      {"duration_ms", o.bandwidth_ms},
                      {"connect_timeout_ms", connect_ms}},
                     measure_ms);
        } catch (const StepError& e) {
          if (fatal(e)) throw;
          m = {{"status", "error"}, {"error", e.what()}};
        }
      }
      f.links.push_back(link_from_json(ca, cb, m, o.pings));
      progress.advance(1);
    }
  }
  for (const auto& s : servers)
    if (s.first != 0) B.call("tcp_stop", {{"server_id", s.first}}, o.timeout_ms);
}

}  // namespace fabkit::pair
