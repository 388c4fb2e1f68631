#include "fabric/pair/ofi_rdm_step.h"

#include <algorithm>
#include <cstdio>

#include "fabric/pair/pair_steps.h"

namespace fabkit::pair {
namespace {

// Beyond the agents' own budget: the answer's way back and the child's teardown.
constexpr int kOfiAnswerMarginMs = 5000;

const Json& at(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// Why this node's libfabric cannot run the test, or "" when it can.
std::string library_problem(const std::string& host, const Json& report) {
  const Json& lib = at(at(report, "libfabric"), "library");
  if (at(lib, "loaded").is_boolean() && at(lib, "loaded").get<bool>()) return "";
  const Json& err = at(lib, "error");
  std::string why = err.is_string() ? err.get<std::string>() : "its node report has no libfabric";
  if (why.rfind("not built with libfabric", 0) == 0)
    return "not built with libfabric (" + host + ")";
  return "libfabric not loadable on " + host + ": " + why;
}

int budget_ms(const PairOptions& o) {
  // Every wait is bounded by timeout_ms; the whole test by this: latency rounds and bandwidth
  // windows each at most a wait, plus set-up. A test on a sound link takes a fraction of it.
  const int64_t waits = 4 + o.ofi.lat_iters + o.ofi.warmup_iters +
                        (o.ofi.bw_messages + o.ofi.window - 1) / o.ofi.window;
  const int64_t bound = waits * static_cast<int64_t>(o.timeout_ms);
  return static_cast<int>(std::min<int64_t>(bound, std::max(o.transport_timeout_ms, o.timeout_ms)));
}

std::optional<double> number(const Json& j, const char* key) {
  const Json& v = at(j, key);
  if (v.is_number()) return v.get<double>();
  return std::nullopt;
}

}  // namespace

int efa_device_count(const Json& report) {
  int n = 0;
  const Json& devices = at(at(report, "rdma"), "devices");
  if (!devices.is_array()) return 0;
  for (const auto& d : devices)
    if (at(d, "driver").is_string() && at(d, "driver").get<std::string>() == "efa") ++n;
  return n;
}

OfiRdmChoice choose_ofi_provider(const std::string& host_a, const Json& report_a,
                                 const std::string& host_b, const Json& report_b,
                                 const std::string& requested) {
  OfiRdmChoice c;
  if (requested.empty()) {
    const int ea = efa_device_count(report_a), eb = efa_device_count(report_b);
    if (ea == 0 || eb == 0) {
      c.skip_reason = "no EFA devices (" + host_a + ": " + std::to_string(ea) + ", " + host_b +
                      ": " + std::to_string(eb) +
                      "); give --ofi-provider tcp to run it over libfabric's tcp provider";
      return c;
    }
    c.provider = "efa";
    c.selected_by = "EFA devices on both hosts";
  } else {
    c.provider = requested;
    c.selected_by = "--ofi-provider";
  }
  for (const auto& [host, report] : {std::pair{host_a, &report_a}, std::pair{host_b, &report_b}}) {
    std::string why = library_problem(host, *report);
    if (!why.empty()) {
      c.provider.reset();
      c.skip_reason = why;
      return c;
    }
  }
  return c;
}

void run_ofi_rdm_step(PairFacts& f, AgentClient& A, AgentClient& B, const PairOptions& o) {
  OfiRdmFacts& r = f.ofi_rdm;
  r.plan = o.ofi;
  OfiRdmChoice c = choose_ofi_provider(f.host_a, f.a.report, f.host_b, f.b.report, o.ofi.provider);
  if (!c.provider) {
    r.status = "skipped";
    r.reason = c.skip_reason;
    r.selected_by = c.selected_by;  // set when it was asked for and a library is missing
    if (!c.selected_by.empty()) r.provider = o.ofi.provider.empty() ? "efa" : o.ofi.provider;
    return;
  }
  r.provider = *c.provider;
  r.selected_by = c.selected_by;
  const auto& l = f.links[*f.chosen_link];
  if (l.streams > 1 && l.multi_stream_gbit_s > 0) r.tcp_gbps = l.multi_stream_gbit_s;
  ProgressScope progress(o.progress, "pair: libfabric rdm " + r.provider);
  Json port = B.call("free_port", {{"addr", l.b.addr}}, o.timeout_ms);
  const uint16_t pn = answer_port(B.host(), "free_port", port);
  const int budget = budget_ms(o);
  Json args = {{"provider", r.provider},
               {"port", pn},
               {"bw_size_bytes", o.ofi.bw_size_bytes},
               {"bw_messages", o.ofi.bw_messages},
               {"window", o.ofi.window},
               {"lat_iters", o.ofi.lat_iters},
               {"warmup_iters", o.ofi.warmup_iters},
               {"timeout_ms", o.timeout_ms},
               {"budget_ms", budget}};
  Json server = args, client = args;
  server.update({{"role", "server"}, {"local_addr", l.b.addr}});
  client.update({{"role", "client"}, {"local_addr", l.a.addr}, {"peer_addr", l.b.addr}});
  B.send("ofi_rdm", server);
  A.send("ofi_rdm", client);
  RankAnswers answers = receive_ranks({&A, &B}, budget + kOfiAnswerMarginMs);
  r.client = answers.docs.size() > 0 ? answers.docs[0] : Json();
  r.server = answers.docs.size() > 1 ? answers.docs[1] : Json();
  if (answers.fatal) {
    r.status = "failed";
    r.reason = answers.fatal->what();
    throw_with_other_ranks(*answers.fatal, {&A, &B}, answers.docs);
  }
  const std::string cs =
      at(r.client, "status").is_string() ? r.client["status"].get<std::string>() : "";
  const std::string ss =
      at(r.server, "status").is_string() ? r.server["status"].get<std::string>() : "";
  if (cs != "ok" || ss != "ok") {
    const Json& bad = cs != "ok" ? r.client : r.server;
    const std::string host = cs != "ok" ? f.host_a : f.host_b;
    r.status = (cs == "unavailable" || ss == "unavailable") ? "skipped" : "failed";
    const Json& why = at(bad, "reason");
    r.reason = host + ": " + (why.is_string() ? why.get<std::string>() : "no reason given");
    return;
  }
  r.status = "ran";
  r.bandwidth_gbps = number(r.client, "bandwidth_gbps");
  r.latency_us = number(r.client, "latency_us");
  if (r.bandwidth_gbps && r.tcp_gbps) r.ratio_to_tcp = *r.bandwidth_gbps / *r.tcp_gbps;
}

std::vector<Finding> judge_ofi_rdm(const PairFacts& f) {
  std::vector<Finding> out;
  const OfiRdmFacts& r = f.ofi_rdm;
  const std::string subject = f.host_a + "<->" + f.host_b;
  if (r.status == "failed") {
    out.push_back(
        warn("pair.ofi_rdm_failed", subject,
             "the RDM test over libfabric's " + r.provider + " provider failed: " + r.reason,
             "read pair.ofi_rdm.client / server; `fi_info -p " + r.provider +
                 " -t FI_EP_RDM` on both hosts; EFA: the security group must allow all "
                 "traffic from itself"));
  } else if (r.status == "skipped" && !r.selected_by.empty()) {
    // Asked for (--ofi-provider, or EFA devices on both hosts) but not run.
    out.push_back(warn("pair.ofi_rdm_skipped", subject,
                       "the RDM test over libfabric (" + r.provider + ", " + r.selected_by +
                           ") did not run: " + r.reason,
                       "fix what the reason names (fabcheck node on each host reports its "
                       "libfabric) and re-run"));
  } else if (r.status == "skipped" && !r.plan.provider.empty()) {
    out.push_back(warn("pair.ofi_rdm_skipped", subject,
                       "the RDM test over libfabric (--ofi-provider " + r.plan.provider +
                           ") did not run: " + r.reason,
                       "fix what the reason names (fabcheck node on each host reports its "
                       "libfabric) and re-run"));
  }
  // EFA bypasses the kernel's TCP stack: slower than TCP sockets between the same two hosts means
  // the EFA path is not what carries the traffic as it should.
  if (r.status == "ran" && r.provider == "efa" && r.ratio_to_tcp && *r.ratio_to_tcp < 1.0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.2f Gbit/s over EFA against %.2f Gbit/s over TCP (%.2fx)",
                  r.bandwidth_gbps.value_or(0), r.tcp_gbps.value_or(0), *r.ratio_to_tcp);
    out.push_back(warn("pair.ofi_rdm_slower_than_tcp", subject,
                       std::string("the RDM test over the efa provider is slower than TCP on the "
                                   "same pair: ") +
                           buf,
                       "check `fi_info -p efa` and the EFA devices' ports on both hosts (fabcheck "
                       "node), and that both instances are in one placement group"));
  }
  return out;
}

Json to_json(const OfiRdmFacts& f) {
  auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(); };
  return {{"status", f.status},
          {"provider", f.provider.empty() ? Json() : Json(f.provider)},
          {"selected_by", f.selected_by.empty() ? Json() : Json(f.selected_by)},
          {"reason", f.reason.empty() ? Json() : Json(f.reason)},
          {"plan",
           {{"provider_asked", f.plan.provider.empty() ? Json() : Json(f.plan.provider)},
            {"bw_size_bytes", f.plan.bw_size_bytes},
            {"bw_messages", f.plan.bw_messages},
            {"window", f.plan.window},
            {"lat_iters", f.plan.lat_iters},
            {"lat_size_bytes", 8}}},
          {"bandwidth_gbps", opt(f.bandwidth_gbps)},
          {"latency_us", opt(f.latency_us)},
          {"tcp_gbps", opt(f.tcp_gbps)},
          {"ratio_to_tcp", opt(f.ratio_to_tcp)},
          {"client", f.client},
          {"server", f.server}};
}

}  // namespace fabkit::pair
