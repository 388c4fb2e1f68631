// The findings of an N-host `fabcheck pair` run (pure).
#include "fabric/pair/group_controller.h"
#include "fabric/pair/verdict.h"

namespace fabkit::pair {
namespace {

bool aborting(const std::string& code) {
  return code == "pair.launch_failed" || code == "pair.agent_unreachable" ||
         code == "pair.agent_rejected" || code == "pair.agent_impostor" ||
         code == "pair.agent_lost" || code == "pair.agent_timeout" ||
         code == "pair.agent_unresponsive" || code == "pair.version_mismatch" ||
         code == "pair.ship_checksum_mismatch" || code == "pair.ship_failed" ||
         code == "pair.ship_unsafe_dir";
}

}  // namespace

std::vector<Finding> judge_group(const GroupFacts& f) {
  std::vector<Finding> out;
  std::string group;
  for (const auto& h : f.hosts) group += (group.empty() ? "" : ",") + h;
  for (const auto& s : f.steps) {
    if (s.status != "failed" || s.code.empty()) continue;
    out.push_back(
        fail(s.code, s.host.empty() ? group : s.host, s.step + ": " + s.error,
             aborting(s.code)
                 ? "run `fabcheck pair` on the two hosts named for the detailed diagnosis"
                 : "run `fabcheck pair` on the neighbours named to see every interface pair"));
  }
  for (auto& r : refused_address_findings(f.refused_addresses)) out.push_back(std::move(r));
  for (const auto& ring : f.rings)
    for (const auto& t : ring.transports) {
      bool correct = !t.sizes.empty();
      for (const auto& s : t.sizes) correct = correct && s.correct;
      std::vector<std::string> ranks;
      for (int h : ring.order) ranks.push_back(f.hosts[static_cast<size_t>(h)]);
      if (t.status == "unavailable")
        out.push_back(info("pair.transport_unavailable", t.transport, t.reason));
      else if (auto crash = t.status != "ok" ? crashed_runner_finding(t, ranks) : std::nullopt)
        out.push_back(*crash);
      else if (t.status != "ok")
        out.push_back(
            warn("pair.transport_failed", t.transport,
                 "the " + std::to_string(f.hosts.size()) + "-rank run failed: " + t.reason,
                 "see ranks[].extra.error in the JSON"));
      else if (!correct)
        out.push_back(
            fail("pair.allreduce_incorrect", t.transport, "at least one size gave a wrong result",
                 "do not train over this transport; re-run and report the sizes that failed"));
    }
  return out;
}

}  // namespace fabkit::pair
