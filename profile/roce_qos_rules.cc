#include "profile/roce_qos_rules.h"

#include <set>
#include <utility>

namespace fabkit::profile {
namespace {

constexpr int kDscpSelector = 5;  // IEEE_8021QAZ_APP_SEL_DSCP

const Json& at(const Json& j, const char* k) {
  static const Json kNull;
  return j.is_object() && j.contains(k) ? j[k] : kNull;
}

std::set<int> pfc_priorities(const Json& port) {
  std::set<int> out;
  const Json& l = at(at(port, "dcb"), "pfc_enabled_priorities");
  if (l.is_array())
    for (const auto& p : l)
      if (p.is_number_integer()) out.insert(p.get<int>());
  return out;
}

bool dcb_read(const Json& port) {
  const Json& s = at(at(port, "dcb"), "status");
  return s.is_string() && s.get<std::string>() == "ok";
}

std::string trust(const Json& port) {
  const Json& t = at(at(port, "nccl_path"), "trust");
  return t.is_string() ? t.get<std::string>() : "unknown";
}

std::string list(const std::set<int>& s) {
  std::string out;
  for (int p : s) out += (out.empty() ? "" : ",") + std::to_string(p);
  return out.empty() ? "none" : out;
}

}  // namespace

std::optional<int> priority_for_traffic_class(const Json& port, int tc, bool* pfc_on) {
  if (trust(port) != "dscp" || !dcb_read(port)) return std::nullopt;
  std::optional<int> prio;
  const Json& apps = at(at(port, "dcb"), "app");
  for (size_t i = 0; apps.is_array() && i < apps.size(); ++i) {
    const Json& a = apps[i];
    if (at(a, "selector") == kDscpSelector && at(a, "protocol") == (tc >> 2) &&
        at(a, "priority").is_number_integer())
      prio = at(a, "priority").get<int>();
  }
  if (!prio) prio = 0;  // no APP entry: the port's default priority
  if (pfc_on) *pfc_on = pfc_priorities(port).count(*prio) > 0;
  return prio;
}

RoceTcChoice lossless_traffic_class(const Json& port) {
  RoceTcChoice c;
  const Json& forced = at(port, "traffic_class");
  if (forced.is_number_integer()) {
    c.traffic_class = forced.get<int>();
    c.why = "the port's traffic_class is " + forced.dump() + " for every RoCE QP";
    return c;
  }
  if (!dcb_read(port)) {
    c.why = "DCB state not read (" +
            (at(at(port, "dcb"), "status").is_string()
                 ? at(at(port, "dcb"), "status").get<std::string>()
                 : std::string("absent")) +
            ")";
    return c;
  }
  const std::set<int> lossless = pfc_priorities(port);
  if (trust(port) != "dscp") {
    c.why = "trust " + trust(port) + ": the traffic class does not choose the priority";
    return c;
  }
  if (lossless.empty()) {
    c.why = "trust dscp but PFC is on no priority: no lossless class to target";
    return c;
  }
  std::optional<std::pair<int, int>> best;  // (priority rank, dscp)
  const Json& apps = at(at(port, "dcb"), "app");
  for (size_t i = 0; apps.is_array() && i < apps.size(); ++i) {
    const Json& a = apps[i];
    if (at(a, "selector") != kDscpSelector || !at(a, "protocol").is_number_integer() ||
        !at(a, "priority").is_number_integer())
      continue;
    int d = at(a, "protocol").get<int>(), p = at(a, "priority").get<int>();
    if (!lossless.count(p)) continue;
    std::pair<int, int> key{d == 26 ? -1 : (p == 0 ? 8 : p), d};
    if (!best || key < *best) best = key;
  }
  if (!best) {
    c.why = "trust dscp, PFC on " + list(lossless) + ", but no DSCP maps to those priorities";
    return c;
  }
  c.traffic_class = best->second * 4 + 2;
  bool on = false;
  auto prio = priority_for_traffic_class(port, *c.traffic_class, &on);
  c.why = "trust dscp, PFC on priorities " + list(lossless) + ": DSCP " +
          std::to_string(best->second) + " -> priority " + std::to_string(prio.value_or(-1)) +
          " (traffic class DSCP*4+2, ECN-capable)";
  return c;
}

}  // namespace fabkit::profile
