// The kernel's side of DCB netlink and SIOCETHTOOL, played from a fixture (--qos-replay FILE and
// the tests): requests are parsed as the kernel would, and answered with the replies dcbnl would
// build (dcb_netlink.cc) and the buffers the ethtool core would fill. The format is documented in
// tests/fixtures/roce_qos/README.md.
#include <linux/dcbnl.h>
#include <linux/ethtool.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>

#include "common/errors.h"
#include "common/json_read.h"
#include "common/replay_file.h"
#include "probes/roce_qos/dcb_netlink.h"
#include "probes/roce_qos/qos_kernel.h"

namespace fabkit::probes {
namespace {

struct ReplayNetdev {
  int dcb_errno = 0;  // answered to every DCB request when non-zero
  DcbState dcb;
  int ethtool_errno = 0;
  std::vector<std::vector<std::pair<std::string, uint64_t>>> reads;  // one per GSTATS call
  size_t next_read = 0;
};

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw std::invalid_argument(where + ": " + what);
}

int errno_for(const std::string& where, const std::string& s) {
  if (s == "not_supported") return EOPNOTSUPP;
  if (s == "no_device") return ENODEV;
  bad(where, "'" + s + "', expected \"not_supported\", \"no_device\" or an object");
}

std::vector<int> int_list(const Json& j, const std::string& where, int max_value) {
  if (!j.is_array()) bad(where, "expected an array of integers");
  std::vector<int> out;
  for (const auto& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > max_value)
      bad(where, "expected integers 0.." + std::to_string(max_value) + ", got " + v.dump());
    out.push_back(v.get<int>());
  }
  return out;
}

std::vector<uint64_t> u64_list(const Json& j, const std::string& where) {
  if (!j.is_array() || j.size() != 8) bad(where, "expected 8 counters (one per priority)");
  std::vector<uint64_t> out;
  for (const auto& v : j) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      bad(where, "expected non-negative integers, got " + v.dump());
    out.push_back(v.get<uint64_t>());
  }
  return out;
}

int bits_of(const std::vector<int>& flags) {
  int mask = 0;
  for (size_t p = 0; p < flags.size(); ++p) mask |= flags[p] ? 1 << p : 0;
  return mask;
}

DcbState parse_dcb(const Json& j, const std::string& where) {
  if (!j.is_object()) bad(where, "expected an object");
  DcbState s;
  s.status = "ok";
  if (j.contains("dcbx")) s.dcbx = int_list(Json::array({j["dcbx"]}), where + ".dcbx", 255)[0];
  if (j.contains("pfc")) {
    const Json& p = j["pfc"];
    const std::string w = where + ".pfc";
    if (!p.is_object() || !p.contains("enabled")) bad(w, "expected an object with \"enabled\"");
    auto enabled = int_list(p["enabled"], w + ".enabled", 1);
    if (enabled.size() != 8)
      bad(w + ".enabled", "expected 8 flags (priorities 0..7), as mlnx_qos prints them");
    s.pfc_enabled = bits_of(enabled);
    s.pfc_source = p.value("source", std::string("ieee"));
    if (s.pfc_source != "ieee" && s.pfc_source != "cee")
      bad(w + ".source", "expected \"ieee\" or \"cee\"");
    if (p.contains("cap")) s.pfc_cap = int_list(Json::array({p["cap"]}), w + ".cap", 8)[0];
    if (p.contains("delay"))
      s.pfc_delay = int_list(Json::array({p["delay"]}), w + ".delay", 65535)[0];
    if (p.contains("requests")) s.pfc_requests = u64_list(p["requests"], w + ".requests");
    if (p.contains("indications"))
      s.pfc_indications = u64_list(p["indications"], w + ".indications");
  }
  if (j.contains("ets")) {
    const Json& e = j["ets"];
    if (!e.is_object()) bad(where + ".ets", "expected an object");
    if (e.contains("prio_tc")) s.prio_tc = int_list(e["prio_tc"], where + ".ets.prio_tc", 7);
    if (e.contains("tc_tx_bw")) s.tc_tx_bw = int_list(e["tc_tx_bw"], where + ".ets.tc_tx_bw", 100);
    if (e.contains("tc_tsa")) s.tc_tsa = int_list(e["tc_tsa"], where + ".ets.tc_tsa", 255);
  }
  // mlnx_qos prints the DSCP APP entries as "prio:3 dscp:31,30,...": the same shape here.
  if (j.contains("dscp2prio")) {
    const Json& m = j["dscp2prio"];
    if (!m.is_object()) bad(where + ".dscp2prio", "expected {\"<prio>\": [dscp, ...]}");
    for (const auto& [prio, dscps] : m.items()) {
      int p = int_list(Json::array({std::atoi(prio.c_str())}), where + ".dscp2prio", 7)[0];
      if (prio != std::to_string(p))
        bad(where + ".dscp2prio", "key '" + prio + "' is not a priority 0..7");
      for (int d : int_list(dscps, where + ".dscp2prio." + prio, 63))
        s.apps.push_back({IEEE_8021QAZ_APP_SEL_DSCP, d, p});
    }
  }
  if (j.contains("app")) {
    for (const auto& a : j["app"]) {
      if (!a.is_object()) bad(where + ".app", "expected objects {selector, protocol, priority}");
      s.apps.push_back(
          {int_list(Json::array({a.value("selector", -1)}), where + ".app.selector", 255)[0],
           int_list(Json::array({a.value("protocol", -1)}), where + ".app.protocol", 65535)[0],
           int_list(Json::array({a.value("priority", -1)}), where + ".app.priority", 7)[0]});
    }
  }
  return s;
}

class ReplayQosKernel : public QosKernel {
 public:
  ReplayQosKernel(std::map<std::string, ReplayNetdev> netdevs, int interval_ms)
      : netdevs_(std::move(netdevs)), interval_ms_(interval_ms) {}
  std::optional<int> recorded_interval_ms() const override { return interval_ms_; }

  Expected<std::vector<uint8_t>> netlink_exchange(const std::vector<uint8_t>& request) override {
    uint8_t cmd = 0;
    std::string ifname;
    uint32_t seq = 0;
    if (!parse_dcb_request(request, cmd, ifname, seq)) return build_netlink_error(EINVAL, seq);
    auto it = netdevs_.find(ifname);
    if (it == netdevs_.end()) return build_netlink_error(ENODEV, seq);
    if (it->second.dcb_errno) return build_netlink_error(it->second.dcb_errno, seq);
    const DcbState& s = it->second.dcb;
    // A driver without ieee_getpfc answers IEEE_GET without PFC; one without CEE ops, EOPNOTSUPP.
    if (cmd == DCB_CMD_PFC_GCFG && s.pfc_source != "cee")
      return build_netlink_error(EOPNOTSUPP, seq);
    if (cmd == DCB_CMD_IEEE_GET && s.pfc_source == "cee") {
      DcbState ieee = s;
      ieee.pfc_source.clear();
      return build_dcb_reply(cmd, ifname, seq, ieee);
    }
    return build_dcb_reply(cmd, ifname, seq, s);
  }

  int ethtool_ioctl(const std::string& ifname, void* cmd) override {
    auto it = netdevs_.find(ifname);
    if (it == netdevs_.end()) return ENODEV;
    ReplayNetdev& n = it->second;
    if (n.ethtool_errno) return n.ethtool_errno;
    const auto& read = n.reads[std::min(n.next_read, n.reads.size() - 1)];
    uint32_t code;
    std::memcpy(&code, cmd, sizeof code);
    if (code == ETHTOOL_GSSET_INFO) {
      auto* info = static_cast<ethtool_sset_info*>(cmd);
      if (!(info->sset_mask & (1ULL << ETH_SS_STATS))) return 0;
      info->sset_mask = 1ULL << ETH_SS_STATS;
      uint32_t count = static_cast<uint32_t>(read.size());
      std::memcpy(reinterpret_cast<uint8_t*>(info) + sizeof *info, &count, sizeof count);
      return 0;
    }
    if (code == ETHTOOL_GSTRINGS) {
      auto* s = static_cast<ethtool_gstrings*>(cmd);
      if (s->string_set != ETH_SS_STATS || s->len != read.size()) return EINVAL;
      auto* out = reinterpret_cast<char*>(s) + sizeof *s;
      for (size_t i = 0; i < read.size(); ++i)
        std::strncpy(out + i * ETH_GSTRING_LEN, read[i].first.c_str(), ETH_GSTRING_LEN);
      return 0;
    }
    if (code == ETHTOOL_GSTATS) {
      auto* s = static_cast<ethtool_stats*>(cmd);
      if (s->n_stats != read.size()) return EINVAL;
      auto* out = reinterpret_cast<uint8_t*>(s) + sizeof *s;
      for (size_t i = 0; i < read.size(); ++i)
        std::memcpy(out + i * sizeof(uint64_t), &read[i].second, sizeof(uint64_t));
      ++n.next_read;
      return 0;
    }
    return EOPNOTSUPP;
  }

 private:
  std::map<std::string, ReplayNetdev> netdevs_;
  int interval_ms_;
};

}  // namespace

std::unique_ptr<QosKernel> make_replay_qos_kernel(const Json& fixture, const std::string& what) {
  try {
    if (!fixture.is_object() || !fixture.contains("netdevs") || !fixture["netdevs"].is_object())
      bad("top level", "expected {\"netdevs\": {\"<netdev>\": {\"dcb\": ..., \"ethtool\": ...}}}");
    std::map<std::string, ReplayNetdev> netdevs;
    for (const auto& [name, nd] : fixture["netdevs"].items()) {
      const std::string w = "netdevs." + name;
      if (!nd.is_object()) bad(w, "expected an object");
      ReplayNetdev r;
      const Json dcb = nd.value("dcb", Json("not_supported"));
      if (dcb.is_string())
        r.dcb_errno = errno_for(w + ".dcb", dcb.get<std::string>());
      else
        r.dcb = parse_dcb(dcb, w + ".dcb");
      const Json eth = nd.value("ethtool", Json("not_supported"));
      if (eth.is_string()) {
        r.ethtool_errno = errno_for(w + ".ethtool", eth.get<std::string>());
      } else {
        if (!eth.is_array() || eth.empty())
          bad(w + ".ethtool",
              "expected a list of reads ({\"counter\": value, ...}), first and second");
        for (size_t i = 0; i < eth.size(); ++i) {
          const std::string wi = w + ".ethtool[" + std::to_string(i) + "]";
          if (!eth[i].is_object()) bad(wi, "expected {\"counter\": value, ...}");
          std::vector<std::pair<std::string, uint64_t>> read;
          for (const auto& [k, v] : eth[i].items()) {
            if (k.empty() || k.size() >= ETH_GSTRING_LEN)
              bad(wi, "counter name '" + k + "' is not 1..31 characters");
            if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
              bad(wi + "." + k, "expected a non-negative integer, got " + v.dump());
            read.emplace_back(k, v.get<uint64_t>());
          }
          // The driver's string table does not change between reads: later reads in its order.
          if (i > 0) {
            if (read.size() != r.reads[0].size())
              bad(wi, "counter names differ from the first read");
            std::vector<std::pair<std::string, uint64_t>> ordered;
            for (const auto& [k, unused] : r.reads[0]) {
              if (!eth[i].contains(k)) bad(wi, "counter '" + k + "' of the first read is missing");
              ordered.emplace_back(k, eth[i][k].get<uint64_t>());
            }
            read = std::move(ordered);
          }
          r.reads.push_back(std::move(read));
        }
      }
      netdevs.emplace(name, std::move(r));
    }
    const Json iv = fixture.value("interval_ms", Json(0));
    if (!iv.is_number_integer() || iv.get<int64_t>() < 0 || iv.get<int64_t>() > 3600000)
      bad("interval_ms",
          "expected the milliseconds between the two ethtool reads, got " + iv.dump());
    if (iv.get<int>() == 0)
      for (const auto& [name, r] : netdevs)
        if (r.reads.size() > 1)
          bad("interval_ms", "netdevs." + name + " has two reads: say how far apart");
    return std::make_unique<ReplayQosKernel>(std::move(netdevs), iv.get<int>());
  } catch (const std::invalid_argument& e) {
    throw UsageError(what + ": " + e.what());
  } catch (const Json::exception& e) {
    throw UsageError(what + ": " + e.what());
  }
}

std::unique_ptr<QosKernel> load_replay_qos_kernel(const std::filesystem::path& file) {
  const std::string what = "--qos-replay " + file.string();
  const std::string fix = "; give a fixture in the format of tests/fixtures/roce_qos/README.md";
  const Json j = read_replay_json(what, file, 4u << 20, fix);
  try {
    return make_replay_qos_kernel(j, what);
  } catch (const UsageError& e) {
    throw UsageError(e.what() + fix);
  }
}

}  // namespace fabkit::probes
