#include "probes/kernel_log/link_flaps.h"

#include <algorithm>

#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/kernel_log/kernel_log_text.h"

namespace fabkit::probes {

LinkFlaps link_flaps(const LogEventGroup& g) {
  LinkFlaps out;
  out.untimed_downs = g.untimed_downs;
  std::vector<double> later;
  for (double t : g.down_times_s) {
    if (t < kBootSettleS)
      ++out.boot_downs;
    else
      later.push_back(t);
  }
  out.later_downs = static_cast<int>(later.size());
  std::sort(later.begin(), later.end());
  size_t first = 0;
  for (size_t last = 0; last < later.size(); ++last) {
    while (later[last] - later[first] > kLinkFlapWindowS) ++first;
    out.max_downs_in_window = std::max(out.max_downs_in_window, static_cast<int>(last - first + 1));
  }
  return out;
}

std::optional<Finding> link_down_finding(const KernelLogFacts& f, const LogEventGroup& e) {
  const LinkFlaps n = link_flaps(e);
  if (n.later_downs == 0 && n.untimed_downs == 0) return std::nullopt;
  const std::string who = e.device_name.empty() ? e.device : e.device_name;
  const std::string state =
      e.ups_after_last_down > 0
          ? "; it came back up after the last time"
          : "; no link-up line after the last time: it may still be down (the rdma and net "
            "sections show the state now)";
  const std::string boot = n.boot_downs > 0
                               ? " (" + std::to_string(n.boot_downs) + " more in the first " +
                                     std::to_string(static_cast<int>(kBootSettleS)) +
                                     " s after boot, while the port was brought up, not counted)"
                               : "";
  const std::string line = ". Line: " + e.sample;
  if (n.max_downs_in_window >= kLinkFlapFailDowns)
    return fail("kernel_log.link_flapping", e.device,
                "link of " + who + " is flapping: it went down " +
                    std::to_string(n.max_downs_in_window) + " times within 24 h (" +
                    kernel_log_span(f, e.count, e.first_s, e.last_s) + " in all)" + boot +
                    "; Azure NHC fails a node from " + std::to_string(kLinkFlapFailDowns) +
                    " in 24 h" + state + line,
                "drain the node; check the cable, transceiver and switch port (ethtool -S, "
                "ibstat, the switch's port log); replace the cable or transceiver; a flapping "
                "link fails NCCL jobs");
  std::string times;
  if (n.later_downs > 0)
    times =
        std::to_string(n.later_downs) + (n.later_downs == 1 ? " time" : " times") + ", at most " +
        std::to_string(n.max_downs_in_window) + " within 24 h, last " +
        kernel_log_when(f, e.last_s) +
        (n.untimed_downs ? ", and " + std::to_string(n.untimed_downs) + " at unknown times" : "");
  else
    times = std::to_string(n.untimed_downs) + (n.untimed_downs == 1 ? " time" : " times") +
            " at unknown times (the log's format gives no time since boot, so flapping cannot be "
            "told from one down after another)";
  return warn("kernel_log.link_down", e.device,
              "link of " + who + " went down " + times + boot + state + line,
              "check the cable, transceiver and switch port (ethtool -S, ibstat); a link that "
              "flaps fails NCCL jobs");
}

}  // namespace fabkit::probes
