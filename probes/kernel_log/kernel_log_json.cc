// The `kernel_log` section (docs/json/kernel_log.md).
#include <cmath>

#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/kernel_log/link_flaps.h"

namespace fabkit::probes {
namespace {

template <typename T>
Json or_null(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

// Seconds since boot to the microsecond the log has; null when unknown.
Json seconds(const std::optional<double>& s) {
  return s ? Json(std::round(*s * 1e6) / 1e6) : Json(nullptr);
}

Json text_or_null(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

}  // namespace

Json to_json(const KernelLogFacts& f) {
  Json xids = Json::array();
  for (const auto& g : f.xids) {
    const XidInfo* x = find_xid(g.xid);
    xids.push_back({{"xid", g.xid},
                    {"name", x ? Json(x->name) : Json(nullptr)},
                    {"class", to_string(g.cls)},
                    {"bus_id", g.bus_id},
                    {"on_gpu", or_null(on_gpu(f, g.bus_id))},
                    {"device", text_or_null(g.device_name)},
                    {"count", g.count},
                    {"first_s", seconds(g.first_s)},
                    {"last_s", seconds(g.last_s)},
                    {"processes", g.processes},
                    {"recovery_action", text_or_null(g.recovery_action)},
                    {"sample", g.sample}});
  }
  Json sxids = Json::array();
  for (const auto& g : f.sxids) {
    const SxidInfo* x = find_sxid(g.sxid);
    sxids.push_back({{"sxid", g.sxid},
                     {"name", x ? Json(x->name) : Json(nullptr)},
                     {"class", to_string(g.cls)},
                     {"fatal", g.fatal},
                     {"bus_id", g.bus_id},
                     {"on_gpu", or_null(on_gpu(f, g.bus_id))},
                     {"switch", g.device},
                     {"device", text_or_null(g.device_name)},
                     {"count", g.count},
                     {"first_s", seconds(g.first_s)},
                     {"last_s", seconds(g.last_s)},
                     {"links", g.links},
                     {"sample", g.sample}});
  }
  Json events = Json::array();
  for (const auto& e : f.events) {
    Json j = {{"kind", e.kind},
              {"device", e.device},
              {"device_name", text_or_null(e.device_name)},
              {"count", e.count},
              {"first_s", seconds(e.first_s)},
              {"last_s", seconds(e.last_s)},
              {"details", e.details},
              {"ups_after_last_down", e.ups_after_last_down},
              {"sample", e.sample}};
    if (e.kind == "link_down") {
      const LinkFlaps n = link_flaps(e);
      j["boot_downs"] = n.boot_downs;
      j["untimed_downs"] = n.untimed_downs;
      j["max_downs_24h"] = n.max_downs_in_window;
    }
    events.push_back(std::move(j));
  }
  return {{"source", f.source},
          {"readable", f.readable},
          {"unreadable_reason", text_or_null(f.unreadable_reason)},
          {"format", text_or_null(f.format)},
          {"records", f.records},
          {"records_in_window", f.records_in_window},
          {"untimed_records", f.untimed_records},
          {"lost_records", f.lost_records},
          {"user_space_records", f.user_space_records},
          {"first_seq", or_null(f.first_seq)},
          {"first_s", seconds(f.first_s)},
          {"last_s", seconds(f.last_s)},
          {"boot_time_unix_s", or_null(f.boot_time_unix_s)},
          {"since", text_or_null(f.since)},
          {"since_boot_s", seconds(f.since_boot_s)},
          {"window_note", text_or_null(f.window_note)},
          {"gpu_bus_ids", or_null(f.gpu_bus_ids)},
          {"xids", xids},
          {"sxids", sxids},
          {"events", events},
          {"read_ms", std::round(f.read_ms * 1000) / 1000}};
}

}  // namespace fabkit::probes
