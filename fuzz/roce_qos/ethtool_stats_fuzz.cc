// Any bytes as a driver's answers to SIOCETHTOOL: bytes 0-1 the string count the driver claims
// (little endian), 2-3 the length it writes back, then its names (32-byte slots, as many as the
// claimed count) and its values (8 bytes each). Read through the gather (names filtered, values
// kept, deltas on a second read) and written as JSON.
#include <linux/ethtool.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "probes/roce_qos/ethtool_stats.h"
#include "probes/roce_qos/qos_kernel.h"
#include "probes/roce_qos/roce_qos_facts.h"

namespace {

class FuzzKernel : public fabkit::probes::QosKernel {
 public:
  FuzzKernel(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  fabkit::Expected<std::vector<uint8_t>> netlink_exchange(const std::vector<uint8_t>&) override {
    return fabkit::SysError{"sendto", EOPNOTSUPP, "fuzz"};
  }
  int ethtool_ioctl(const std::string&, void* cmd) override {
    uint32_t code;
    std::memcpy(&code, cmd, sizeof code);
    const uint32_t claimed = size_ > 1 ? (data_[0] | data_[1] << 8) : 0;
    const uint32_t written = size_ > 3 ? (data_[2] | data_[3] << 8) : claimed;
    const uint8_t* rest = data_ + std::min<size_t>(size_, 4);
    const size_t rest_size = size_ - std::min<size_t>(size_, 4);
    if (code == ETHTOOL_GSSET_INFO) {
      auto* info = static_cast<ethtool_sset_info*>(cmd);
      std::memcpy(reinterpret_cast<uint8_t*>(info) + sizeof *info, &claimed, sizeof claimed);
      return 0;
    }
    if (code == ETHTOOL_GSTRINGS) {
      auto* s = static_cast<ethtool_gstrings*>(cmd);
      // A driver fills at most what was asked for; it may report a different length.
      const size_t room = static_cast<size_t>(s->len) * ETH_GSTRING_LEN;
      std::memcpy(reinterpret_cast<uint8_t*>(s) + sizeof *s, rest, std::min(room, rest_size));
      s->len = written;
      return 0;
    }
    if (code == ETHTOOL_GSTATS) {
      auto* s = static_cast<ethtool_stats*>(cmd);
      const size_t room = static_cast<size_t>(s->n_stats) * sizeof(uint64_t);
      const size_t names = std::min(rest_size, static_cast<size_t>(claimed) * ETH_GSTRING_LEN);
      std::memcpy(reinterpret_cast<uint8_t*>(s) + sizeof *s, rest + names,
                  std::min(room, rest_size - names));
      s->n_stats = written;
      return 0;
    }
    return EOPNOTSUPP;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabkit::probes;
  FuzzKernel kernel(data, size);
  RoceQosFacts f;
  RoceQosPort p;
  p.device = "mlx5_0";
  p.port = 1;
  p.netdev = "eth0";
  p.ethtool = read_ethtool_counters(kernel, p.netdev);
  reread_ethtool_counters(kernel, p.netdev, p.ethtool);
  f.counter_interval_ms = 100;
  f.ports.push_back(p);
  judge_roce_qos(f);
  to_json(f).dump();
  parse_gstrings(data, static_cast<uint32_t>(size / ETH_GSTRING_LEN));
  return 0;
}
