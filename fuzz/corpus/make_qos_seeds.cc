// Writes the binary seeds of fuzz_dcb_netlink, fuzz_ethtool_stats and fuzz_ib_qos_mad from the
// fixtures (the files are committed; this records how they were made): each RoCE fixture's DCB
// answers as the reply bytes the replay builds for every RTM_GETDCB command, its first ethtool
// read in fuzz_ethtool_stats' layout, and each IB fixture's PortInfo, SLtoVL and PathRecord
// replies. Built by hand against build/ (see fuzz/roce_qos.cmake), run from the repository root.
#include <linux/dcbnl.h>
#include <linux/ethtool.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/file_reader.h"
#include "common/json_read.h"
#include "probes/ib_qos/mad_codec.h"
#include "probes/ib_qos/mad_transport.h"
#include "probes/roce_qos/dcb_netlink.h"
#include "probes/roce_qos/qos_kernel.h"

namespace fs = std::filesystem;
using namespace fabkit;
using namespace fabkit::probes;

namespace {

void write(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
}

// Reads the whole ETH_SS_STATS table of `netdev` through `k` into fuzz_ethtool_stats' layout.
std::vector<uint8_t> ethtool_seed(QosKernel& k, const std::string& netdev) {
  std::vector<uint8_t> info_buf(sizeof(ethtool_sset_info) + 4, 0);
  auto* info = reinterpret_cast<ethtool_sset_info*>(info_buf.data());
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ULL << ETH_SS_STATS;
  if (k.ethtool_ioctl(netdev, info)) return {};
  uint32_t n = 0;
  std::memcpy(&n, info_buf.data() + sizeof *info, 4);
  std::vector<uint8_t> sb(sizeof(ethtool_gstrings) + n * ETH_GSTRING_LEN, 0);
  auto* s = reinterpret_cast<ethtool_gstrings*>(sb.data());
  s->cmd = ETHTOOL_GSTRINGS;
  s->string_set = ETH_SS_STATS;
  s->len = n;
  std::vector<uint8_t> vb(sizeof(ethtool_stats) + n * 8, 0);
  auto* v = reinterpret_cast<ethtool_stats*>(vb.data());
  v->cmd = ETHTOOL_GSTATS;
  v->n_stats = n;
  if (k.ethtool_ioctl(netdev, s) || k.ethtool_ioctl(netdev, v)) return {};
  std::vector<uint8_t> out = {uint8_t(n), uint8_t(n >> 8), uint8_t(n), uint8_t(n >> 8)};
  out.insert(out.end(), sb.begin() + sizeof *s, sb.end());
  out.insert(out.end(), vb.begin() + sizeof *v, vb.end());
  return out;
}

}  // namespace

int main() {
  for (const auto& e : fs::directory_iterator("tests/fixtures/roce_qos")) {
    if (e.path().extension() != ".json") continue;
    Json j = parse_json(value(read_text(e.path())), e.path().string());
    auto k = make_replay_qos_kernel(j, e.path().string());
    const std::string stem = e.path().stem().string();
    for (const auto& [netdev, unused] : j["netdevs"].items()) {
      for (uint8_t cmd : {DCB_CMD_IEEE_GET, DCB_CMD_PFC_GCFG, DCB_CMD_GDCBX}) {
        auto reply = k->netlink_exchange(build_dcb_request(cmd, netdev, 1));
        if (ok(reply))
          write("fuzz/corpus/fuzz_dcb_netlink/" + stem + "-cmd" + std::to_string(cmd),
                value(reply));
      }
      auto seed = ethtool_seed(*k, netdev);
      if (!seed.empty()) write("fuzz/corpus/fuzz_ethtool_stats/" + stem, seed);
    }
  }
  for (const auto& e : fs::directory_iterator("tests/fixtures/ib_qos")) {
    if (e.path().extension() != ".json") continue;
    Json j = parse_json(value(read_text(e.path())), e.path().string());
    auto t = make_replay_mad_transport(j, e.path().string());
    const std::string stem = e.path().stem().string();
    MadDestination sa;
    sa.to_sa = true;
    const std::pair<const char*, std::vector<uint8_t>> requests[] = {
        {"portinfo", build_smp_get(kAttrPortInfo, 1, 1)},
        {"sl2vl", build_smp_get(kAttrSlToVlTable, 0, 1)},
        {"pathrecord",
         build_path_record_get("fe80::b859:9f03:d6:5b3e", "fe80::b859:9f03:d6:5b3e", 1)}};
    for (const auto& [name, req] : requests) {
      auto reply = t->exchange(
          "mlx5_0", 1, std::string(name) == "pathrecord" ? sa : MadDestination{}, req, 1000);
      if (ok(reply)) write("fuzz/corpus/fuzz_ib_qos_mad/" + stem + "-" + name, value(reply));
    }
  }
  std::cout << "seeds written\n";
  return 0;
}
