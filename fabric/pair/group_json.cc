// The "pair_group" section of a Report (kind "pair", 3 or more hosts; docs/json/pair.md) and its
// text form.
#include <unistd.h>

#include <cstdio>

#include "fabric/pair/group_controller.h"
#include "fabric/pair/pair_json.h"
#include "reports/report_render.h"

namespace fabkit::pair {
namespace {

// Bumped on any incompatible change of the "pair_group" section (docs/json/pair.md).
constexpr int kGroupSectionVersion = 1;

bool aborting(const std::string& code) {
  return code == "pair.launch_failed" || code == "pair.agent_unreachable" ||
         code == "pair.agent_rejected" || code == "pair.agent_impostor" ||
         code == "pair.agent_lost" || code == "pair.agent_timeout";
}

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
  for (const auto& ring : f.rings)
    for (const auto& t : ring.transports) {
      bool correct = !t.sizes.empty();
      for (const auto& s : t.sizes) correct = correct && s.correct;
      if (t.status == "unavailable")
        out.push_back(info("pair.transport_unavailable", t.transport, t.reason));
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

Json transport_json(const TransportResult& t, size_t world) {
  Json j = to_json(t, nullptr);
  const SizeRow* peak = nullptr;
  bool correct = !t.sizes.empty();
  for (const auto& s : t.sizes) {
    if (!peak || s.busbw_gbps > peak->busbw_gbps) peak = &s;
    correct = correct && s.correct;
  }
  j["world_size"] = world;
  j["port_attempts"] = t.port_attempts;
  j["peak_busbw_gbps"] = peak ? Json(peak->busbw_gbps) : Json();
  j["peak_bytes"] = peak ? Json(peak->bytes) : Json();
  j["all_correct"] = correct;
  return j;
}

std::string num(const Json& j, int digits) {
  if (!j.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, j.get<double>());
  return buf;
}

}  // namespace

Report build_group_report(const GroupFacts& f) {
  Report r;
  r.kind = "pair";
  char buf[256] = {};
  r.hostname = ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "unknown";
  r.generated_at = utc_now_rfc3339();
  r.findings = judge_group(f);
  Json steps = Json::array(), agents = Json::array(), probed = Json::array(),
       ring_addrs = Json::array(), rings = Json::array();
  for (const auto& s : f.steps)
    steps.push_back({{"step", s.step},
                     {"host", s.host.empty() ? Json() : Json(s.host)},
                     {"status", s.status},
                     {"code", s.code.empty() ? Json() : Json(s.code)},
                     {"error", s.error.empty() ? Json() : Json(s.error)},
                     {"elapsed_ms", s.elapsed_ms}});
  for (const auto& a : f.agents) agents.push_back(to_json(a));
  for (const auto& p : f.probed) {
    Json links = Json::array();
    for (size_t i = 0; i < p.links.size(); ++i)
      links.push_back(to_json(p.links[i], p.chosen && *p.chosen == i));
    probed.push_back({{"a", f.hosts[p.a]}, {"b", f.hosts[p.b]}, {"links", links}});
  }
  for (size_t i = 0; i < f.addrs.size(); ++i)
    ring_addrs.push_back({{"host", f.hosts[i]}, {"addr", f.addrs[i]}, {"ifname", f.ifnames[i]}});
  for (const auto& ring : f.rings) {
    Json order = Json::array(), ts = Json::array();
    for (int h : ring.order) order.push_back(f.hosts[h]);
    for (const auto& t : ring.transports) ts.push_back(transport_json(t, ring.order.size()));
    rings.push_back({{"order", order}, {"transports", ts}});
  }
  r.sections.push_back({"pair_group",
                        {{"pair_group_version", kGroupSectionVersion},
                         {"hosts", f.hosts},
                         {"launcher", f.launcher},
                         {"timeout_ms", f.timeout_ms},
                         {"steps", steps},
                         {"agents", agents},
                         {"probed_pairs", probed},
                         {"ring_addrs", ring_addrs},
                         {"rings", rings}}});
  return r;
}

void render_group_text(const Report& r, std::ostream& out) {
  for (const auto& sec : r.sections) {
    if (sec.name != "pair_group") continue;
    const Json& s = sec.facts;
    out << "pair group of " << s["hosts"].size() << " hosts (launcher: " << s.value("launcher", "")
        << ")\n";
    for (const auto& p : s["probed_pairs"])
      for (const auto& l : p["links"])
        if (l.value("chosen", false))
          out << "  " << p["a"].get<std::string>() << " -> " << p["b"].get<std::string>() << " via "
              << l["b"]["addr"].get<std::string>() << ": rtt " << num(l["rtt_median_us"], 1)
              << " us, " << num(l["single_stream_gbit_s"], 2) << " Gbit/s\n";
    for (const auto& ring : s["rings"]) {
      std::string order;
      for (const auto& h : ring["order"])
        order += (order.empty() ? "" : " -> ") + h.get<std::string>();
      out << "\nring " << order << " (busbw = algbw * 2(n-1)/n; GB/s = 1e9 B/s)\n";
      for (const auto& t : ring["transports"]) {
        char line[256];
        std::snprintf(line, sizeof line, "  %-16s %-12s peak busbw %10s GB/s at %s B, results %s\n",
                      t["transport"].get<std::string>().c_str(),
                      t["status"].get<std::string>().c_str(), num(t["peak_busbw_gbps"], 3).c_str(),
                      t["peak_bytes"].dump().c_str(),
                      t["status"] != "ok"             ? "-"
                      : t.value("all_correct", false) ? "exact"
                                                      : "WRONG");
        out << line;
      }
    }
  }
  reports::render_text(r, out);
}

}  // namespace fabkit::pair
