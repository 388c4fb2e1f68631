#include "probes/roce_qos/ethtool_stats.h"

#include <linux/ethtool.h>

#include <cerrno>
#include <cstring>

#include "common/utf8_text.h"

namespace fabkit::probes {

std::vector<std::string> parse_gstrings(const uint8_t* data, uint32_t count) {
  std::vector<std::string> names;
  names.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const char* s = reinterpret_cast<const char*>(data) + static_cast<size_t>(i) * ETH_GSTRING_LEN;
    // A driver's bytes: the names reach findings and the JSON report, which must be UTF-8.
    names.push_back(utf8_clean(std::string(s, strnlen(s, ETH_GSTRING_LEN))));
  }
  return names;
}

EthtoolStatsRead read_ethtool_stats(QosKernel& kernel, const std::string& ifname) {
  EthtoolStatsRead r;
  // ethtool_sset_info ends in a flexible array: one u32 per bit set in sset_mask.
  std::vector<uint8_t> info_buf(sizeof(ethtool_sset_info) + sizeof(uint32_t), 0);
  auto* info = reinterpret_cast<ethtool_sset_info*>(info_buf.data());
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ULL << ETH_SS_STATS;
  if (int e = kernel.ethtool_ioctl(ifname, info)) {
    r.err = e;
    r.call = "ETHTOOL_GSSET_INFO";
    return r;
  }
  uint32_t count = 0;
  if (info->sset_mask & (1ULL << ETH_SS_STATS))
    std::memcpy(&count, info_buf.data() + sizeof(ethtool_sset_info), sizeof count);
  if (!(info->sset_mask & (1ULL << ETH_SS_STATS)) || count == 0) {
    r.err = EOPNOTSUPP;  // the kernel clears the bit of a set the driver does not have
    r.call = "ETHTOOL_GSSET_INFO";
    return r;
  }
  if (count > kMaxEthtoolStats) {
    r.err = E2BIG;
    r.call = "ETHTOOL_GSSET_INFO";
    return r;
  }
  std::vector<uint8_t> str_buf(
      sizeof(ethtool_gstrings) + static_cast<size_t>(count) * ETH_GSTRING_LEN, 0);
  auto* strings = reinterpret_cast<ethtool_gstrings*>(str_buf.data());
  strings->cmd = ETHTOOL_GSTRINGS;
  strings->string_set = ETH_SS_STATS;
  strings->len = count;
  if (int e = kernel.ethtool_ioctl(ifname, strings)) {
    r.err = e;
    r.call = "ETHTOOL_GSTRINGS";
    return r;
  }
  std::vector<uint8_t> stat_buf(
      sizeof(ethtool_stats) + static_cast<size_t>(count) * sizeof(uint64_t), 0);
  auto* stats = reinterpret_cast<ethtool_stats*>(stat_buf.data());
  stats->cmd = ETHTOOL_GSTATS;
  stats->n_stats = count;
  if (int e = kernel.ethtool_ioctl(ifname, stats)) {
    r.err = e;
    r.call = "ETHTOOL_GSTATS";
    return r;
  }
  // The kernel writes how many it filled; a driver reconfigured between the calls may differ.
  uint32_t n = std::min(count, std::min(strings->len, stats->n_stats));
  r.names = parse_gstrings(str_buf.data() + sizeof(ethtool_gstrings), n);
  r.values.resize(n);
  // n may be 0 (a driver that now reports no statistics): memcpy from or to a vector's null data()
  // is undefined even for 0 bytes, and the fuzz build aborts on it.
  if (n > 0)
    std::memcpy(r.values.data(), stat_buf.data() + sizeof(ethtool_stats), n * sizeof(uint64_t));
  return r;
}

}  // namespace fabkit::probes
