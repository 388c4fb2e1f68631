#include "fabric/pair/rdma_rc_plan.h"

#include "common/errors.h"
#include "fabric/pair/rdma_rails.h"
#include "fabric/rdma/rc_types.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <stdexcept>

namespace fabkit::pair {
namespace {

std::optional<double> opt_num(const Json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(); }

std::string side_reason(const Json& doc, const char* who) {
  const Json reason = doc.is_object() ? doc.value("reason", Json()) : Json("no answer");
  std::string r = reason.is_string() ? reason.get<std::string>() : "";
  return r.empty() ? "" : std::string(who) + ": " + r;
}

}  // namespace

std::vector<RcPortPair> rc_port_pairs(const Json& report_a, const Json& report_b) {
  return plan_rails(report_a, report_b).pairs;
}

Json rc_request_args(const RcPortPair& p, bool on_a, const std::string& mode, const std::string& local_addr,
                     const std::string& peer_addr, uint16_t port, int timeout_ms, const RcPlan& plan) {
  bool lat = mode == "send_lat";
  Json j = {{"role", on_a ? "client" : "server"}, {"mode", mode},
            {"device", on_a ? p.hca_a : p.hca_b}, {"ib_port", on_a ? p.port_a : p.port_b},
            {"gid_index", on_a ? p.gid_index_a : p.gid_index_b}, {"local_addr", local_addr},
            {"port", port}, {"size_bytes", lat ? plan.send_lat_bytes : plan.write_bw_bytes},
            {"iters", lat ? plan.send_lat_iters : plan.write_bw_iters}, {"timeout_ms", timeout_ms},
            {"budget_ms", rc_budget_ms(mode, timeout_ms, plan)}};
  if (on_a) j["peer_addr"] = peer_addr;
  return j;
}

namespace {
// What the controller allows beyond the agent's budget: the answer's trip back, and the
// agent's teardown of its QP.
constexpr int kRcAnswerMarginMs = 5000;
}  // namespace

int rc_budget_ms(const std::string& mode, int timeout_ms, const RcPlan& plan) {
  // The agent's own default (fabric/rdma), sent explicitly so both ends agree on it.
  return mode == "send_lat" ? fabric::rdma::rc_default_budget_ms(fabric::rdma::RcMode::kSendLat,
                                                                 plan.send_lat_bytes,
                                                                 plan.send_lat_iters, timeout_ms)
                            : fabric::rdma::rc_default_budget_ms(fabric::rdma::RcMode::kWriteBw,
                                                                 plan.write_bw_bytes,
                                                                 plan.write_bw_iters, timeout_ms);
}

int rc_answer_bound_ms(const std::string& mode, int timeout_ms, const RcPlan& plan) {
  return rc_budget_ms(mode, timeout_ms, plan) + kRcAnswerMarginMs;
}

RcPlan parse_rc_plan(int64_t rc_iters, const std::string& rc_size, int64_t rc_lat_iters) {
  auto iters = [](const char* flag, int64_t v, const char* what, int dflt) {
    if (v < 1 || v > 1000000)
      throw UsageError(std::string(flag) + " " + std::to_string(v) + ": give 1..1000000 " + what +
                       " (the agents take no more; perftest's default is " + std::to_string(dflt) +
                       ", and a slow link such as soft-RoCE under emulation wants a few hundred)");
    return static_cast<int>(v);
  };
  RcPlan p;
  p.write_bw_iters = iters("--rc-iters", rc_iters, "RDMA writes", kRcWriteBwIters);
  p.send_lat_iters = iters("--rc-lat-iters", rc_lat_iters, "ping-pongs", kRcSendLatIters);
  std::string digits = rc_size;
  uint64_t mult = 1;
  if (!digits.empty()) {
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
    if (u == 'K' || u == 'M') {
      mult = u == 'K' ? 1u << 10 : 1u << 20;
      digits.pop_back();
    }
  }
  const bool number = !digits.empty() && digits.size() <= 9 &&
                      digits.find_first_not_of("0123456789") == std::string::npos;
  const uint64_t bytes = number ? std::stoull(digits) * mult : 0;
  if (bytes < 1 || bytes > (16u << 20))
    throw UsageError("--rc-size '" + rc_size +
                     "': give the bytes of one RDMA write, 1 to 16M with an optional K or M "
                     "suffix, e.g. --rc-size 64K (perftest's default; the agents register no "
                     "larger buffer)");
  p.write_bw_bytes = static_cast<uint32_t>(bytes);
  return p;
}

RcPairResult combine_rc(const RcPortPair& p, const Json& write_bw, const Json& send_lat,
                        const RcPlan& plan) {
  RcPairResult r;
  r.ports = p;
  r.write_bw = write_bw;
  r.send_lat = send_lat;
  bool all_ok = true;
  for (const Json* mode : {&write_bw, &send_lat})
    for (size_t i = 0; i < 2; ++i) {
      const Json doc = mode->is_array() && mode->size() > i ? (*mode)[i] : Json();
      if (!doc.is_object() || doc.value("status", Json()) != "ok") {
        all_ok = false;
        std::string why = side_reason(doc, i == 0 ? "A (client)" : "B (server)");
        if (!why.empty())
          r.reason += (r.reason.empty() ? "" : "; ") + std::string(mode == &write_bw ? "write_bw " : "send_lat ") + why;
      }
    }
  r.status = all_ok ? "ok" : "failed";
  const Json wc = write_bw.is_array() && !write_bw.empty() ? write_bw[0] : Json();
  const Json lc = send_lat.is_array() && !send_lat.empty() ? send_lat[0] : Json();
  if (wc.is_object() && wc.value("status", Json()) == "ok") r.bw_gbps = opt_num(wc, "bw_gbps");
  if (lc.is_object() && lc.value("status", Json()) == "ok") {
    r.lat_us_median = opt_num(lc, "lat_us_median");
    r.lat_us_p99 = opt_num(lc, "lat_us_p99");
    if (lc.contains("lat_histogram") && !lc["lat_histogram"].is_null()) {
      try {  // the agent's document: the histogram must hold exactly the iterations asked for
        r.lat_histogram = histogram_from_json(
            lc["lat_histogram"], "send_lat A (client): lat_histogram", plan.send_lat_iters);
      } catch (const std::invalid_argument& e) {
        r.status = "failed";
        r.reason += (r.reason.empty() ? "" : "; ") + std::string(e.what());
        r.lat_us_median = r.lat_us_p99 = std::nullopt;
      }
    }
  }
  for (const Json* d : {&wc, &lc})
    if (d->is_object() && opt_num(*d, "path_mtu").value_or(0) > 0)
      r.path_mtu = (*d)["path_mtu"].get<int>();
  return r;
}

std::vector<Finding> judge_rdma_rc(const PairFacts& f) {
  std::vector<Finding> out;
  if (f.rdma_rc.status == "unavailable")
    out.push_back(info("pair.rdma_rc_unavailable", f.host_a + "<->" + f.host_b,
                       "RDMA RC point-to-point test not run: " + f.rdma_rc.reason));
  // Skipped where there was RDMA to measure: the report has no RDMA figure, and says why.
  if (f.rdma_rc.status == "skipped" && f.a.report.is_object() && f.b.report.is_object() &&
      !plan_rails(f.a.report, f.b.report).pairs.empty())
    out.push_back(warn("pair.rdma_rc_skipped", f.host_a + "<->" + f.host_b,
                       "both hosts have an ACTIVE RDMA port pair, but the RC test did not run: " +
                           f.rdma_rc.reason,
                       "fix what the failed step names (its own finding), then run fabcheck pair "
                       "again; `--transports none` runs the RC test without the all-reduces"));
  for (const auto& r : f.rdma_rc.pairs) {
    std::string pair_name = (r.ports.rail.empty() ? std::string() : "rail " + r.ports.rail + " (") + f.host_a + ":" +
                            r.ports.hca_a + ":" + std::to_string(r.ports.port_a) + "<->" + f.host_b + ":" +
                            r.ports.hca_b + ":" + std::to_string(r.ports.port_b) + (r.ports.rail.empty() ? "" : ")");
    std::set<std::string> seen;
    bool diagnosed_fail = false;
    for (const Json* mode : {&r.write_bw, &r.send_lat})
      for (size_t i = 0; mode->is_array() && i < mode->size(); ++i) {
        const Json& doc = (*mode)[i];
        if (!doc.is_object() || !doc.contains("diagnoses") || !doc["diagnoses"].is_array()) continue;
        for (const auto& d : doc["diagnoses"]) {
          Finding fd;
          try {
            fd = finding_from_json(d);  // the agent's document: checked, never trusted blindly
          } catch (const std::invalid_argument&) {
            continue;
          }
          // A side's finding about its peer's GID is the peer's fault: it is named on the peer,
          // and counted once with the peer's own finding of it.
          const bool about_peer = fd.code == "rdma.rc.peer_null_gid";
          if (about_peer) fd.code = "rdma.rc.null_gid";
          if (fd.code.rfind("rdma.rc.", 0) != 0 || !seen.insert(fd.code).second) continue;
          diagnosed_fail = diagnosed_fail || fd.severity == Severity::kFail;
          const bool on_a = (i == 0) != about_peer;
          if (about_peer)
            fd.subject = on_a ? r.ports.hca_a + ":" + std::to_string(r.ports.port_a)
                              : r.ports.hca_b + ":" + std::to_string(r.ports.port_b);
          fd.subject = (on_a ? f.host_a : f.host_b) + ":" + fd.subject;
          fd.message = pair_name + ": " + fd.message;
          out.push_back(fd);
        }
      }
    if (r.status != "ok" && !diagnosed_fail)
      out.push_back(warn("pair.rdma_rc_failed", pair_name, "RDMA RC test failed: " + r.reason,
                         "read the reasons per side in pair.rdma_rc.pairs[].write_bw/send_lat; "
                         "check that both HCA ports are ACTIVE and the agents can reach each other"));
  }
  return out;
}

Json to_json(const RdmaRcFacts& rc) {
  Json pairs = Json::array();
  for (const auto& r : rc.pairs) {
    const auto& p = r.ports;
    Json lat_histogram = r.lat_histogram ? fabkit::to_json(*r.lat_histogram) : Json();
    pairs.push_back({{"rail", p.rail},
                     {"a", {{"hca", p.hca_a}, {"port", p.port_a}, {"gid_index", p.gid_index_a}}},
                     {"b", {{"hca", p.hca_b}, {"port", p.port_b}, {"gid_index", p.gid_index_b}}},
                     {"link_layer", p.link_layer}, {"rate_gbps", opt(p.rate_gbps)},
                     {"status", r.status}, {"reason", r.reason},
                     {"bw_gbps", opt(r.bw_gbps)}, {"lat_us_median", opt(r.lat_us_median)},
                     {"lat_us_p99", opt(r.lat_us_p99)}, {"lat_histogram", lat_histogram},
                     {"path_mtu", r.path_mtu > 0 ? Json(r.path_mtu) : Json()},
                     {"write_bw", r.write_bw}, {"send_lat", r.send_lat}});
  }
  return {{"status", rc.status},
          {"reason", rc.reason.empty() ? Json() : Json(rc.reason)},
          {"plan",
           {{"write_bw", {{"size_bytes", rc.plan.write_bw_bytes}, {"iters", rc.plan.write_bw_iters}}},
            {"send_lat", {{"size_bytes", rc.plan.send_lat_bytes}, {"iters", rc.plan.send_lat_iters}}}}},
          {"rail_method", rc.rail_method.empty() ? Json() : Json(rc.rail_method)},
          {"cross_rail_not_applicable", rc.cross_rail_not_applicable},
          {"unpaired", rc.unpaired},
          {"pairs", pairs}};
}

}  // namespace fabkit::pair
