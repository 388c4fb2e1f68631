// The NIC statistics `ethtool -S` prints, through SIOCETHTOOL: ETHTOOL_GSSET_INFO for the count of
// ETH_SS_STATS strings, ETHTOOL_GSTRINGS for their names, ETHTOOL_GSTATS for the values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probes/roce_qos/qos_kernel.h"

namespace fabkit::probes {

struct EthtoolStatsRead {
  int err = 0;       // errno of the call that failed (EOPNOTSUPP: the driver has no statistics)
  std::string call;  // "ETHTOOL_GSSET_INFO" | "ETHTOOL_GSTRINGS" | "ETHTOOL_GSTATS"
  std::vector<std::string> names;
  std::vector<uint64_t> values;  // same length as names when err == 0
};

// One full read (names and values). A driver with more counters than kMaxEthtoolStats is an error,
// not an allocation of whatever it claims.
EthtoolStatsRead read_ethtool_stats(QosKernel& kernel, const std::string& ifname);
inline constexpr uint32_t kMaxEthtoolStats = 1u << 16;

// The names in a GSTRINGS buffer: `count` NUL-padded ETH_GSTRING_LEN (32) byte slots.
std::vector<std::string> parse_gstrings(const uint8_t* data, uint32_t count);

}  // namespace fabkit::probes
