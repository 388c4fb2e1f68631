// The "pair_group" section of a Report (kind "pair", 3 or more hosts; docs/json/pair.md).
#include "fabric/pair/pair_document.h"

namespace fabkit::pair {
using namespace pair;  // the facts' types: this file renders nothing else
namespace {

// Bumped on any incompatible change of the "pair_group" section (docs/json/pair.md).
constexpr int kGroupSectionVersion = 1;

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

}  // namespace

Report build_group_report(const GroupFacts& f) {
  Report r = new_report("pair");
  r.findings = judge_group(f);
  Json steps = Json::array(), agents = Json::array(), probed = Json::array(),
       ring_addrs = Json::array(), rings = Json::array();
  for (const auto& s : f.steps) steps.push_back(to_json(s));
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

}  // namespace fabkit::pair
