// The I/O of the RoCE QoS probe: which ports are RoCE (from the rdma probe), their sysfs files,
// and their netdevs' DCB state and statistics through QosKernel.
#include <linux/dcbnl.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "common/utf8_text.h"
#include "probes/nccl_env/nccl_env_facts.h"
#include "probes/rdma/rdma_facts.h"
#include "probes/roce_qos/dcb_netlink.h"
#include "probes/roce_qos/ethtool_stats.h"
#include "probes/roce_qos/qos_kernel.h"
#include "probes/roce_qos/roce_qos_facts.h"

namespace fabkit::probes {
namespace fs = std::filesystem;
namespace {

std::atomic<uint32_t> g_seq{1};

// "1"/"0" files named 0..7 (ecn/roce_np/enable/P).
std::map<int, bool> read_enable_dir(const fs::path& dir, std::vector<SysError>& errors) {
  std::map<int, bool> out;
  for (int p = 0; p < 8; ++p) {
    const fs::path f = dir / std::to_string(p);
    if (!path_exists(f)) continue;
    auto v = read_int(f);
    if (!v || (*v != 0 && *v != 1)) {
      errors.push_back(
          {"parse", EINVAL, f.string() + ": '" + read_line(f).value_or("") + "', expected 0 or 1"});
      continue;
    }
    out[p] = *v == 1;
  }
  return out;
}

// Every numeric file of an ecn/roce_* directory and of its params/ (MLNX_OFED has used both).
std::map<std::string, int64_t> read_params(const fs::path& dir) {
  std::map<std::string, int64_t> out;
  for (const fs::path& d : {dir, dir / "params"})
    for (const auto& name : list_dir(d)) {
      if (path_is_directory(d / name)) continue;
      if (auto v = read_int(d / name)) out[utf8_clean(name)] = *v;
    }
  return out;
}

std::string errno_text(int e) {
  return std::string(strerror(e)) + " (errno " + std::to_string(e) + ")";
}

// One DCB command; false with `out` filled in when the exchange itself failed or was refused.
bool dcb_command(QosKernel& kernel, const std::string& netdev, uint8_t cmd, DcbState& out,
                 int& refused) {
  const uint32_t seq = g_seq++;
  auto reply = kernel.netlink_exchange(build_dcb_request(cmd, netdev, seq));
  if (!ok(reply)) {
    out.status = "error";
    out.detail = error(reply).to_string();
    return false;
  }
  DcbReplyStatus st = parse_dcb_reply(value(reply), cmd, seq, out);
  if (!st.malformed.empty()) {
    out.status = "error";
    out.detail = "RTM_GETDCB reply for " + netdev + ": " + st.malformed;
    return false;
  }
  refused = st.kernel_errno;
  return st.kernel_errno == 0;
}

}  // namespace

bool is_qos_counter(const std::string& n) {
  for (const char* key :
       {"pause", "discard", "drop", "out_of_buffer", "ecn", "cnp", "marked", "storm"})
    if (n.find(key) != std::string::npos) return true;
  return false;
}

DcbState read_dcb(QosKernel& kernel, const std::string& netdev) {
  DcbState s;
  int refused = 0;
  if (!dcb_command(kernel, netdev, DCB_CMD_IEEE_GET, s, refused)) {
    if (s.status == "error") return s;
    if (refused == EOPNOTSUPP) {
      // dcb_doit: a netdev without dcbnl_ops (veth, most virtual and many non-RDMA NICs).
      s.status = "not_supported";
      s.detail =
          "the driver has no DCB netlink operations (RTM_GETDCB: " + errno_text(refused) + ")";
    } else if (refused == ENODEV) {
      s.status = "no_device";
      s.detail = "no netdev " + netdev +
                 " in this network namespace (RTM_GETDCB: " + errno_text(refused) + ")";
    } else {
      s.status = "error";
      s.detail = "RTM_GETDCB DCB_CMD_IEEE_GET " + netdev + ": " + errno_text(refused);
    }
    return s;
  }
  s.status = "ok";
  // Drivers with only CEE operations answer IEEE_GET without PFC: ask the CEE way.
  if (s.pfc_source.empty()) {
    DcbState cee = s;
    if (dcb_command(kernel, netdev, DCB_CMD_PFC_GCFG, cee, refused) && !cee.pfc_source.empty())
      s = cee;
  }
  if (!s.dcbx) {
    DcbState dx = s;
    if (dcb_command(kernel, netdev, DCB_CMD_GDCBX, dx, refused)) s.dcbx = dx.dcbx;
  }
  if (s.pfc_source.empty()) s.detail = "the driver answered neither IEEE nor CEE PFC";
  return s;
}

EthtoolCounters read_ethtool_counters(QosKernel& kernel, const std::string& netdev) {
  EthtoolCounters c;
  EthtoolStatsRead r = read_ethtool_stats(kernel, netdev);
  if (r.err) {
    c.status = r.err == EOPNOTSUPP ? "not_supported" : r.err == ENODEV ? "no_device" : "error";
    c.detail = "SIOCETHTOOL " + r.call + " " + netdev + ": " + errno_text(r.err);
    return c;
  }
  c.status = "ok";
  c.stats_total = static_cast<int>(r.names.size());
  for (size_t i = 0; i < r.names.size(); ++i)
    if (is_qos_counter(r.names[i])) c.values[r.names[i]] = r.values[i];
  return c;
}

void reread_ethtool_counters(QosKernel& kernel, const std::string& netdev, EthtoolCounters& c) {
  if (c.status != "ok") return;
  EthtoolStatsRead r = read_ethtool_stats(kernel, netdev);
  if (r.err) return;  // gone in between (link reset): the first read stands, no rise to report
  for (size_t i = 0; i < r.names.size(); ++i) {
    auto it = c.values.find(r.names[i]);
    if (it == c.values.end()) continue;
    c.deltas[r.names[i]] = r.values[i] >= it->second ? r.values[i] - it->second : r.values[i];
  }
}

std::optional<int> parse_traffic_class(const std::string& text) {
  std::string t = trim(text);
  auto eq = t.rfind('=');
  if (eq != std::string::npos) t = trim(t.substr(eq + 1));
  if (t.empty() || t.size() > 3 || t.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  int v = std::stoi(t);
  if (v > 255) return std::nullopt;
  return v;
}

void read_port_sysfs(const fs::path& sys, RoceQosPort& p, std::vector<SysError>& errors) {
  const fs::path net = sys / "class" / "net" / p.netdev;
  if (auto m = read_int(net / "mtu")) p.netdev_mtu = static_cast<int>(*m);
  if (auto t = read_line(net / "qos" / "trust")) p.trust_file = utf8_clean(trim(*t));
  const fs::path tc =
      sys / "class" / "infiniband" / p.device / "tc" / std::to_string(p.port) / "traffic_class";
  if (auto t = read_text(tc, 4096); ok(t)) {
    p.traffic_class_text = utf8_clean(trim(value(t)));
    p.traffic_class = parse_traffic_class(*p.traffic_class_text);
    // MLNX_OFED writes "Global tclass=N" when set and nothing (or -1) when unset.
    if (!p.traffic_class && !p.traffic_class_text->empty() && *p.traffic_class_text != "-1" &&
        p.traffic_class_text->find("tclass=-1") == std::string::npos)
      errors.push_back({"parse", EINVAL,
                        tc.string() + ": '" + *p.traffic_class_text +
                            "', expected 'Global tclass=<0..255>' or a number"});
  }
  p.ecn_np = read_enable_dir(net / "ecn" / "roce_np" / "enable", errors);
  p.ecn_rp = read_enable_dir(net / "ecn" / "roce_rp" / "enable", errors);
  p.dcqcn_np = read_params(net / "ecn" / "roce_np");
  p.dcqcn_rp = read_params(net / "ecn" / "roce_rp");
}

RoceQosFacts gather_roce_qos(const ProbeContext& ctx, const RdmaFacts& rdma,
                             const NcclEnvFacts& nccl) {
  RoceQosFacts f;
  if (const auto* v = find_variable(nccl, "NCCL_IB_TC")) {
    f.nccl_ib_tc = v->value;
    f.nccl_ib_tc_source = v->source;
  }
  if (const auto* v = find_variable(nccl, "NCCL_IB_SL")) {
    f.nccl_ib_sl = v->value;
    f.nccl_ib_sl_source = v->source;
  }
  for (const auto& d : rdma.devices)
    for (const auto& p : d.ports) {
      // A netdev in another namespace has no DCB, ethtool or sysfs here to read.
      if (p.link_layer != verbs::LinkLayer::kEthernet || !p.netdev ||
          p.netdev_place == NetdevPlace::kOtherNamespace)
        continue;
      RoceQosPort q;
      q.device = d.name;
      q.soft_roce = d.parent.has_value();
      q.port = p.port;
      q.netdev = *p.netdev;
      q.active = p.state == verbs::PortState::kActive;
      q.active_mtu = p.active_mtu;
      q.roce_v2_gid_index = p.roce_v2_gid_index;
      f.ports.push_back(std::move(q));
    }
  if (ctx.options.qos_replay) {
    f.source = "replay";
    f.replay_file = ctx.options.qos_replay->string();
    f.kernel = load_replay_qos_kernel(*ctx.options.qos_replay);  // UsageError on a bad file
  } else if (ctx.roots.live) {
    f.source = "live";
    if (!f.ports.empty()) f.kernel = make_live_qos_kernel();
  } else {
    f.source = "sysroot";
  }
  for (auto& p : f.ports) {
    read_port_sysfs(ctx.roots.sys, p, f.errors);
    if (!f.kernel) continue;
    // A failed exchange is kept as the port's status and detail (the call and errno are in it).
    p.dcb = read_dcb(*f.kernel, p.netdev);
    p.ethtool = read_ethtool_counters(*f.kernel, p.netdev);
  }
  f.first_read = std::chrono::steady_clock::now();
  return f;
}

void reread_roce_qos(RoceQosFacts& f, int min_interval_ms) {
  if (!f.kernel || min_interval_ms <= 0) return;
  bool any = false;
  for (const auto& p : f.ports) any = any || p.ethtool.status == "ok";
  if (!any) return;
  if (auto recorded = f.kernel->recorded_interval_ms()) {
    if (*recorded <= 0) return;  // a replay with one read
    f.counter_interval_ms = *recorded;
  } else {
    const auto wanted = f.first_read + std::chrono::milliseconds(min_interval_ms);
    if (std::chrono::steady_clock::now() < wanted) std::this_thread::sleep_until(wanted);
    f.counter_interval_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 std::chrono::steady_clock::now() - f.first_read)
                                                 .count());
  }
  for (auto& p : f.ports) reread_ethtool_counters(*f.kernel, p.netdev, p.ethtool);
}

}  // namespace fabkit::probes
