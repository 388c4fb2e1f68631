// Counter names are a driver's bytes: one that is not UTF-8 must reach the report as text (U+FFFD
// for the bad byte), not make the JSON writer throw and the whole node report fail. Found by
// fuzz_ethtool_stats (its crash input is in fuzz/corpus/fuzz_ethtool_stats/).
#include <gtest/gtest.h>
#include <linux/ethtool.h>

#include <cstring>

#include "probes/roce_qos/ethtool_stats.h"
#include "probes/roce_qos/qos_kernel.h"
#include "probes/roce_qos/roce_qos_facts.h"

namespace fabkit::probes {
namespace {

// A driver with two statistics, the first named with a Latin-1 byte.
class Latin1Driver : public QosKernel {
 public:
  Expected<std::vector<uint8_t>> netlink_exchange(const std::vector<uint8_t>&) override {
    return SysError{"sendto", EOPNOTSUPP, "test"};
  }
  int ethtool_ioctl(const std::string&, void* cmd) override {
    uint32_t code;
    std::memcpy(&code, cmd, sizeof code);
    const char names[2][ETH_GSTRING_LEN] = {"rx_pause_\xb9", "rx_discards_phy"};
    if (code == ETHTOOL_GSSET_INFO) {
      const uint32_t n = 2;
      std::memcpy(static_cast<uint8_t*>(cmd) + sizeof(ethtool_sset_info), &n, sizeof n);
      return 0;
    }
    if (code == ETHTOOL_GSTRINGS) {
      std::memcpy(static_cast<uint8_t*>(cmd) + sizeof(ethtool_gstrings), names, sizeof names);
      return 0;
    }
    if (code == ETHTOOL_GSTATS) {
      const uint64_t v[2] = {7, 9};
      std::memcpy(static_cast<uint8_t*>(cmd) + sizeof(ethtool_stats), v, sizeof v);
      return 0;
    }
    return EOPNOTSUPP;
  }
};

TEST(RoceQosEthtool, CounterNameThatIsNotUtf8IsWrittenAsText) {
  Latin1Driver driver;
  RoceQosFacts f;
  RoceQosPort p;
  p.device = "mlx5_2";
  p.port = 1;
  p.netdev = "ens1f0np0";
  p.ethtool = read_ethtool_counters(driver, p.netdev);
  ASSERT_EQ(p.ethtool.status, "ok");
  reread_ethtool_counters(driver, p.netdev, p.ethtool);
  f.ports.push_back(p);
  std::string json;
  ASSERT_NO_THROW(json = to_json(f).dump());
  EXPECT_NE(json.find("rx_pause_\xef\xbf\xbd"), std::string::npos) << json;
  EXPECT_EQ(f.ports[0].ethtool.values.at("rx_pause_\xef\xbf\xbd"), 7u);
  EXPECT_EQ(f.ports[0].ethtool.deltas.at("rx_pause_\xef\xbf\xbd"), 0u);  // matched on the reread
}

}  // namespace
}  // namespace fabkit::probes
