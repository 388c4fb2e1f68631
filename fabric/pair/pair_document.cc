// The "pair" section of a Report (kind "pair"); docs/json/pair.md describes every field.
#include "fabric/pair/pair_document.h"

#include "fabric/pair/rdma_rc_plan.h"

namespace fabkit::pair {
using namespace pair;  // the facts' types: this file renders nothing else
namespace {

// Bumped on any incompatible change of the "pair" section (docs/json/pair.md lists the history).
constexpr int kPairSectionVersion = 1;

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(); }
Json opt(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(); }

}  // namespace

Json to_json(const StepRecord& s) {
  return {{"step", s.step},
          {"host", s.host.empty() ? Json() : Json(s.host)},
          {"status", s.status},
          {"code", s.code.empty() ? Json() : Json(s.code)},
          {"error", s.error.empty() ? Json() : Json(s.error)},
          {"elapsed_ms", s.elapsed_ms}};
}

Json to_json(const Candidate& c) {
  return {{"ifname", c.ifname},
          {"addr", c.addr},
          {"prefix_len", c.prefix_len},
          {"mtu", opt(c.mtu)},
          {"speed_mbps", opt(c.speed_mbps)},
          {"kind", c.kind}};
}

Json to_json(const AgentFacts& a) {
  Json cands = Json::array();
  for (const auto& c : a.candidates) cands.push_back(to_json(c));
  return {{"host", a.host},
          {"hostname", a.hello.value("hostname", "")},
          {"agent_version", a.hello.value("version", "")},
          {"agent_shipped", a.hello.contains("shipped") && a.hello["shipped"] == true},
          {"interfaces_source", a.interfaces_source},
          {"candidates", cands},
          {"transports", a.transports},
          {"node_report", a.report}};
}

Json to_json(const LinkResult& l, bool chosen) {
  Json j = {{"a", to_json(l.a)},
            {"b", to_json(l.b)},
            {"chosen", chosen},
            {"status", l.status},
            {"error", l.error.empty() ? Json() : Json(l.error)}};
  bool open = l.status == "open";
  j["connect_time_us"] = open ? Json(l.connect_time_us) : Json();
  j["rtt_median_us"] = open ? Json(l.rtt_median_us) : Json();
  j["rtt_p99_us"] = open ? Json(l.rtt_p99_us) : Json();
  j["pings"] = l.pings;
  j["rtt_histogram"] = open && l.rtt_histogram ? to_json(*l.rtt_histogram) : Json();
  j["single_stream_gbit_s"] = open ? Json(l.single_stream_gbit_s) : Json();
  j["multi_stream_gbit_s"] = open && l.streams > 1 ? Json(l.multi_stream_gbit_s) : Json();
  j["streams"] = l.streams;
  j["mtu_match"] = l.a.mtu && l.b.mtu ? Json(*l.a.mtu == *l.b.mtu) : Json();
  j["link_rate_gbit_s"] = opt(link_rate_gbit_s(l.a, l.b));
  return j;
}

Json to_json(const PortCheck& p) {
  if (!p.ran) return nullptr;
  return {{"port", p.port},
          {"listen_addr", p.listen_addr},
          {"from_addr", p.from_addr},
          {"listen_status", p.listen_status},
          {"status", p.status.empty() ? Json() : Json(p.status)},
          {"connect_time_us", opt(p.connect_time_us)},
          {"timeout_ms", p.timeout_ms},
          {"error", p.error.empty() ? Json() : Json(p.error)}};
}

Json to_json(const TransportResult& t, const RankedTransport* r) {
  Json sizes = Json::array();
  for (const auto& s : t.sizes)
    sizes.push_back({{"bytes", s.bytes},
                     {"time_us", s.time_us},
                     {"algbw_gbps", s.algbw_gbps},
                     {"busbw_gbps", s.busbw_gbps},
                     {"correct", s.correct}});
  Json j = {{"transport", t.transport}, {"status", t.status}, {"reason", t.reason}};
  if (r) {
    j["peak_busbw_gbps"] = r->peak_busbw_gbps;
    j["peak_bytes"] = r->peak_bytes;
    j["all_correct"] = r->all_correct;
    j["link_rate_gbit_s"] = opt(r->link_rate_gbit_s);
    j["link_fraction"] = opt(r->link_fraction);
    j["vs_raw_exchange"] = opt(r->vs_raw_exchange);
    j["via"] = r->via.empty() ? Json() : Json(r->via);
  }
  // NCCL's own account of the network it used, and which net plugin carried it (the NCCL runner
  // reads its child's log, nccl_runner.cc): the first rank's, as both ranks load the same way.
  for (const auto& rank : t.ranks)
    if (rank.is_object() && rank.contains("extra") && rank["extra"].is_object() &&
        rank["extra"].contains("net")) {
      j["net"] = rank["extra"]["net"];
      break;
    }
  j["sizes"] = sizes;
  j["ranks"] = t.ranks;
  return j;
}

Report build_pair_report(const PairFacts& f) {
  Verdict v = compute_verdict(f);
  Report r = new_report("pair");
  r.findings = pair_findings(f, v);

  Json steps = Json::array();
  for (const auto& s : f.steps) steps.push_back(to_json(s));
  Json links = Json::array();
  for (size_t i = 0; i < f.links.size(); ++i)
    links.push_back(to_json(f.links[i], v.link && *v.link == i));
  Json transports = Json::array();
  Json ranking = Json::array();
  for (const auto& rt : v.ranking) {
    ranking.push_back(rt.transport);
    for (const auto& t : f.transports)
      if (t.transport == rt.transport) transports.push_back(to_json(t, &rt));
  }
  Json rec = {{"interface_a", nullptr},
              {"interface_b", nullptr},
              {"addr_a", nullptr},
              {"addr_b", nullptr},
              {"transport", v.transport ? Json(*v.transport) : Json()},
              {"env", Json::object()},
              {"reason", v.reason}};
  if (v.link) {
    const auto& l = f.links[*v.link];
    rec["interface_a"] = l.a.ifname;
    rec["interface_b"] = l.b.ifname;
    rec["addr_a"] = l.a.addr;
    rec["addr_b"] = l.b.addr;
    // Interface names are per host; the env block is per host too (profile/ turns it into files).
    rec["env"] = {{f.host_a,
                   {{"NCCL_SOCKET_IFNAME", "=" + l.a.ifname},
                    {"GLOO_SOCKET_IFNAME", l.a.ifname},
                    {"MASTER_ADDR", l.a.addr},
                    {"MASTER_PORT", std::to_string(f.rendezvous_port)}}},
                  {f.host_b,
                   {{"NCCL_SOCKET_IFNAME", "=" + l.b.ifname},
                    {"GLOO_SOCKET_IFNAME", l.b.ifname},
                    {"MASTER_ADDR", l.a.addr},
                    {"MASTER_PORT", std::to_string(f.rendezvous_port)}}}};
  }
  Json section = {{"pair_version", kPairSectionVersion},
                  {"hosts", {{"a", f.host_a}, {"b", f.host_b}}},
                  {"launcher", f.launcher},
                  {"timeout_ms", f.timeout_ms},
                  {"steps", steps},
                  {"agents", {{"a", to_json(f.a)}, {"b", to_json(f.b)}}},
                  {"links", links},
                  {"rendezvous", to_json(f.rendezvous)},
                  {"transports", transports},
                  {"ranking", ranking},
                  {"rdma_allreduce",
                   {{"transport", v.rdma.transport ? Json(*v.rdma.transport) : Json()},
                    {"reason", v.rdma.reason}}},
                  {"rdma_rc", to_json(f.rdma_rc)},
                  {"ofi_rdm", to_json(f.ofi_rdm)},
                  {"recommended", rec}};
  r.sections.push_back({"pair", section});
  return r;
}

}  // namespace fabkit::pair
