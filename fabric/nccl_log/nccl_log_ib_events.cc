// The event names are libibverbs' ibv_event_type_str() (rdma-core libibverbs/enum_strs.c), which
// NCCL prints: 2.4-2.11 "NET/IB : Got async event : %s", 2.12+ "NET/IB : %s:%d Got async event :
// %s", 2.19+ "Got async error event: %s", 2.23+ "Got non-fatal async event: %s(%d)" and "async
// fatal event on QP (%p): %s". Which events a job survives follows the verbs semantics
// (infiniband/verbs.h: the affiliated and unaffiliated error events) and what NCCL does with each
// (transport/net_ib: only the fatal device, QP and CQ errors stop it; since 2.23 it names the
// others non-fatal); UCX likewise reports SM change and client reregistration as diagnostics, not
// warnings (openucx/ucx#7349).
#include "fabric/nccl_log/nccl_log_ib_events.h"

#include <cctype>

namespace fabkit::nccl_log {
namespace {

using sv = std::string_view;

struct EventInfo {
  sv name;
  bool benign;
  const char* meaning;
};

constexpr EventInfo kEvents[] = {
    {"client reregistration", true,
     "the subnet manager asked the port to re-register (after an SM handover, restart or "
     "sweep); NCCL carries on"},
    {"SM change", true, "the port's subnet manager changed (a failover); NCCL carries on"},
    {"port active", true, "the port came (back) up"},
    {"LID change", true,
     "the port's LID changed; NCCL carries on, but connections set up with the old LID fail if "
     "completion errors follow"},
    {"GID table change", true,
     "the port's GID table changed (an address added or removed on a RoCE netdev); NCCL carries "
     "on, but connections set up with the old GID fail if completion errors follow"},
    {"P_Key change", true, "the port's partition keys changed"},
    {"communication established", true, "a queue pair received its first message"},
    {"send queue drained", true, "a queue pair's send queue drained"},
    {"path migrated", true, "a queue pair moved to its alternate path"},
    {"last WQE reached", true, "a queue pair attached to a shared receive queue was drained"},
    {"SRQ limit reached", true, "a shared receive queue fell below its limit"},
    {"port error", false, "the port went down: the link was lost (cable, transceiver, switch)"},
    {"local catastrophic error", false, "the adapter failed (firmware, PCIe, overheating)"},
    {"local work queue catastrophic error", false, "a queue pair failed"},
    {"invalid request local work queue error", false, "a queue pair received an invalid request"},
    {"local access violation work queue error", false,
     "a queue pair's access to a buffer was refused"},
    {"CQ error", false, "a completion queue overflowed or failed"},
    {"path migration request error", false, "a queue pair could not move to its alternate path"},
    {"SRQ catastrophic error", false, "a shared receive queue failed"},
    {"WQ fatal", false, "a work queue failed"},
};

bool has(sv s, sv sub) { return s.find(sub) != sv::npos; }

sv trim(sv s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// "mlx5_0:1": a device and port, as NCCL names them after "NET/IB : ".
bool is_device_port(sv tok) {
  const size_t colon = tok.rfind(':');
  if (colon == sv::npos || colon == 0 || colon + 1 >= tok.size()) return false;
  for (size_t i = colon + 1; i < tok.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(tok[i]))) return false;
  return tok.find('/') == sv::npos;
}

}  // namespace

std::optional<IbAsyncEvent> ib_async_event(sv msg) {
  const size_t async = msg.find("async");
  if (async == sv::npos || has(msg, "ibv_get_async_event")) return std::nullopt;
  const size_t event = msg.find("event", async);
  if (event == sv::npos) return std::nullopt;
  // The event's name follows the last ':' after "event" ("on QP (0x7f..): local access ...").
  const size_t colon = msg.rfind(':');
  if (colon == sv::npos || colon < event) return std::nullopt;
  sv name = trim(msg.substr(colon + 1));
  // 2.23+ appends the event's number: "GID table change(18)".
  if (!name.empty() && name.back() == ')') {
    const size_t open = name.rfind('(');
    if (open != sv::npos && open > 0) name = trim(name.substr(0, open));
  }
  if (name.empty()) return std::nullopt;
  IbAsyncEvent out;
  out.event = std::string(name);
  out.meaning = "an event libibverbs reports";
  for (const EventInfo& e : kEvents)
    if (name == e.name) {
      out.benign = e.benign;
      out.meaning = e.meaning;
    }
  const size_t ib = msg.find("NET/IB");
  if (ib != sv::npos && ib < async) {
    sv rest = msg.substr(ib + 6);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == ':')) rest.remove_prefix(1);
    const sv tok = rest.substr(0, rest.find(' '));
    if (is_device_port(tok)) out.device = std::string(tok);
  }
  return out;
}

}  // namespace fabkit::nccl_log
