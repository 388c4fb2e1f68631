// The nccl_log section of `fabcheck nccl-log --json` (docs/json/net.md).
#include "fabric/nccl_log/nccl_failure_kinds.h"
#include "fabric/nccl_log/nccl_log.h"

namespace fabkit::nccl_log {
namespace {

Json opt(const std::optional<std::string>& v) { return v ? Json(*v) : Json(nullptr); }
Json opt_int(const std::optional<int>& v) { return v ? Json(*v) : Json(nullptr); }

Json error_json(const NcclLogError& e) {
  return {{"line", e.line},   {"kind", e.kind},    {"text", e.text},
          {"cause", e.cause}, {"fix", e.fix},      {"source", e.source},
          {"who", e.who},     {"host", e.host},    {"rank", opt_int(e.rank)},
          {"peer", e.peer},   {"detail", e.detail}};
}

}  // namespace

Json to_json(const NcclLogSummary& s) {
  Json j;
  j["version"] = opt(s.version);
  j["network"] = opt(s.network);
  j["network_evidence"] = opt(s.network_evidence);
  j["networks_seen"] = s.networks_seen;
  j["hcas"] = s.hcas;
  j["hca_link_layers"] = s.hca_link_layers;
  j["ib_oob_interface"] = opt(s.ib_oob_interface);
  j["socket_interfaces"] = s.socket_interfaces;
  j["bootstrap_interface"] = opt(s.bootstrap_interface);
  j["plugin"] = opt(s.plugin);
  j["plugin_path"] = opt(s.plugin_path);
  j["plugin_version"] = opt(s.plugin_version);
  j["plugin_absent"] = s.plugin_absent;
  j["ofi_provider"] = opt(s.ofi_provider);
  j["gdr"] = s.gdr ? Json(*s.gdr) : Json(nullptr);
  j["net_channel_lines"] = s.net_channel_lines;
  j["intra_node_channel_lines"] = s.intra_node_channel_lines;
  j["ib_disabled"] = s.ib_disabled;
  j["ib_no_device"] = s.ib_no_device;
  j["errors"] = Json::array();
  for (const auto& e : s.errors) j["errors"].push_back(error_json(e));
  j["lines"] = s.lines;
  j["nccl_lines"] = s.nccl_lines;
  j["torch_nccl_lines"] = s.torch_nccl_lines;
  j["plugin_lines"] = s.plugin_lines;
  j["cause"] = opt(s.cause_kind);
  j["order_by_time"] = s.order_by_time;
  j["failures"] = Json::array();
  for (const auto& f : s.failures) {
    const FailureKind& k = failure_kind(f.kind);
    Json causes = Json::array();
    for (const char* c : k.causes) causes.push_back(c);
    j["failures"].push_back({{"kind", f.kind},
                             {"role", f.role},
                             {"tier", to_string(k.tier)},
                             {"title", k.title},
                             {"meaning", k.meaning},
                             {"causes", causes},
                             {"fix", k.fix},
                             {"count", f.count},
                             {"said_by", f.said_by},
                             {"first", error_json(s.errors.at(f.first_error))}});
  }
  j["ranks"] = Json::array();
  for (const auto& r : s.ranks)
    j["ranks"].push_back({{"who", r.who},
                          {"host", r.host},
                          {"pid", r.pid >= 0 ? Json(r.pid) : Json(nullptr)},
                          {"rank", opt_int(r.rank)},
                          {"cuda_dev", r.cuda_dev >= 0 ? Json(r.cuda_dev) : Json(nullptr)},
                          {"lines", r.lines},
                          {"network", opt(r.network)},
                          {"errors", r.errors},
                          {"first_error_kind", opt(r.first_error_kind)},
                          {"first_error_line", r.first_error_line},
                          {"source", r.source}});
  j["ranks_dropped"] = s.ranks_dropped;
  // Only when a cap was reached (no real job's log reaches one), so ordinary reports stay as
  // they were.
  if (s.networks_seen_dropped || s.untracked_process_lines || s.unruled_warnings_dropped ||
      s.ib_events_dropped) {
    j["dropped"] = {{"networks_seen", s.networks_seen_dropped},
                    {"process_lines", s.untracked_process_lines},
                    {"unruled_warnings", s.unruled_warnings_dropped}};
    if (s.ib_events_dropped) j["dropped"]["ib_events"] = s.ib_events_dropped;
  }
  // Only when the log holds such events, so reports of logs without them stay as they were.
  if (!s.ib_events.empty()) {
    j["ib_events"] = Json::array();
    for (const auto& e : s.ib_events)
      j["ib_events"].push_back({{"event", e.event},
                                {"device", e.device.empty() ? Json(nullptr) : Json(e.device)},
                                {"count", e.count},
                                {"benign", e.benign},
                                {"meaning", e.meaning},
                                {"first_line", e.first_line},
                                {"source", e.source},
                                {"first_said_by", e.first_who}});
  }
  return j;
}

}  // namespace fabkit::nccl_log
