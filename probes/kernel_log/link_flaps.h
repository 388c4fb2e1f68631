// Links going down, counted over time: a link that went down five times within 24 hours is
// flapping (Azure NHC's check_ib_link_flapping, which fails the node at that count), a single
// down (and up) after boot is a warning, and downs in the first two minutes after boot are the
// driver bringing the port up, never a finding. Pure.
#pragma once

#include <optional>

#include "common/finding.h"

namespace fabkit::probes {

struct KernelLogFacts;
struct LogEventGroup;

// Azure/azurehpc-health-checks customTests/azure_ib_link_flapping.nhc: TIME_INTERVAL_HOURS 24,
// IB_LINK_FLAP_THRESHOLD 5, failing when a device's count is -ge the threshold.
constexpr double kLinkFlapWindowS = 24 * 3600;
constexpr int kLinkFlapFailDowns = 5;
// A NIC driver reports its ports down when it probes them, before udev renames them and the
// network service brings them up; the kernel's own boot and the services' start are over within
// this many seconds on the nodes fabcheck runs on. A down before then is no flap, and a port that
// stayed down since is an unused port (the net and rdma sections show its state now).
constexpr double kBootSettleS = 120;

struct LinkFlaps {
  int boot_downs = 0;           // at a known time, before kBootSettleS
  int later_downs = 0;          // at a known time, after it
  int untimed_downs = 0;        // lines whose format gives no time since boot (dmesg -T, journal)
  int max_downs_in_window = 0;  // the most later downs within any kLinkFlapWindowS
};
LinkFlaps link_flaps(const LogEventGroup& group);

// The finding for a link_down group; nullopt when every down was at boot.
std::optional<Finding> link_down_finding(const KernelLogFacts& facts, const LogEventGroup& group);

}  // namespace fabkit::probes
