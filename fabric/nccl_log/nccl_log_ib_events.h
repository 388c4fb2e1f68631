// The IB asynchronous events NCCL's IB transport reports (`NET/IB : mlx5_0:1 Got async event :
// client reregistration`): which event, on which port, and whether a job can carry on after it.
// Pure; internal to fabric/nccl_log.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fabkit::nccl_log {

struct IbAsyncEvent {
  std::string event;   // libibverbs' ibv_event_type_str: "client reregistration", "port error"
  std::string device;  // "mlx5_0:1" when the line names it, else ""
  bool benign = false;
  const char* meaning = "";
};

// The event a WARN's message reports; nothing for any other message (also for "Call to
// ibv_get_async_event failed", which names no event).
std::optional<IbAsyncEvent> ib_async_event(std::string_view msg);

}  // namespace fabkit::nccl_log
