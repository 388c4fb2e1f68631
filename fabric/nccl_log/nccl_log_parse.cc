// Line formats come from NCCL's own INFO/WARN calls (see tests/fixtures/nccl_log/README.md):
//   init.cc       "NCCL version %s"             "Using network %s"
//   bootstrap.cc  "Bootstrap : Using %s:%s"
//   net_ib.cc     "NET/IB : Using [%d]%s:%d/%s ... ; OOB %s:%s"   "NET/IB : No device found."
//   net_socket.cc "NET/Socket : Using [%d]%s:%s ..."
//   transport.cc  "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s" (2.3-2.6: "Ring %02d")
// Matching is by substring and small regexes per line: a log is whatever a job printed, with
// other programs' output interleaved, so nothing here assumes a line is NCCL's.
#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

#include "fabric/nccl_log/nccl_log.h"
#include "common/utf8_text.h"

namespace fabkit::nccl_log {
namespace {

constexpr size_t kMaxLineChars = 4096;

bool has(const std::string& s, const char* sub) { return s.find(sub) != std::string::npos; }

bool has_ci(const std::string& s, const std::string& sub) {
  auto it = std::search(s.begin(), s.end(), sub.begin(), sub.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != s.end();
}

std::string trim_copy(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// "host:pid:tid [dev] NCCL INFO msg" / "host:pid:tid [dev] file.cc:12 NCCL WARN msg" -> msg.
std::string message_of(const std::string& line, bool* is_warn) {
  *is_warn = false;
  for (const char* tag : {"NCCL INFO ", "NCCL WARN "}) {
    auto p = line.find(tag);
    if (p != std::string::npos) {
      *is_warn = tag[5] == 'W';
      return trim_copy(line.substr(p + 10));
    }
  }
  return trim_copy(line);
}

NcclLogError classify_error(const std::string& msg, int lineno) {
  NcclLogError e;
  e.line = lineno;
  e.text = msg;
  static const std::regex completion_status(R"((with error|status=|status)\s*(\d+))");
  std::smatch m;
  if (has(msg, "ibv_reg_") && has_ci(msg, "fail")) {
    e.kind = "ibv_reg_mr_failed";
    e.cause = has(msg, "Cannot allocate memory")
                  ? "memory registration ran out of lockable memory: RLIMIT_MEMLOCK is too low "
                    "for NCCL's pinned buffers"
                  : "memory registration failed: RLIMIT_MEMLOCK too low, or GPU buffers registered "
                    "without GPUDirect RDMA support (nvidia-peermem not loaded, no DMA-BUF)";
    e.fix = "ulimit -l unlimited (limits.conf, LimitMEMLOCK=infinity for slurmd, docker --ulimit "
            "memlock=-1); for GPU memory: modprobe nvidia-peermem, or NCCL_DMABUF_ENABLE=1 with "
            "the open GPU kernel driver";
  } else if (has_ci(msg, "completion") && std::regex_search(msg, m, completion_status)) {
    int status = std::stoi(m[2].str().substr(0, 6));
    if (status == 12) {
      e.kind = "transport_retry_exceeded";
      e.cause = "IBV_WC_RETRY_EXC_ERR (12): the peer did not acknowledge within the retry budget: "
                "a link down or flapping, a bad cable or transceiver, the peer process died, or "
                "(RoCE) a lossy path without PFC";
      e.fix = "check both ports (ibstat; counters symbol_error, link_downed, port_rcv_errors); "
              "raise NCCL_IB_TIMEOUT=22 and NCCL_IB_RETRY_CNT=7 for long paths; on RoCE verify "
              "PFC/ECN and the GID index";
    } else if (status == 13) {
      e.kind = "rnr_retry_exceeded";
      e.cause = "IBV_WC_RNR_RETRY_EXC_ERR (13): the receiver had no buffer posted in time";
      e.fix = "look for the first error on the peer: it usually failed earlier";
    } else if (status == 5) {
      e.kind = "work_request_flushed";
      e.cause = "IBV_WC_WR_FLUSH_ERR (5): the QP was already in error; a consequence, not the "
                "cause";
      e.fix = "find the first completion error in the logs of all ranks";
    } else {
      e.kind = "completion_error";
      e.cause = "an RDMA work completion failed with status " + std::to_string(status) +
                " (ibv_wc_status)";
      e.fix = "look up the status in ibv_wc_status_str and check the ports of both nodes";
    }
  } else if (has(msg, "ibv_modify_qp") && has_ci(msg, "fail")) {
    e.kind = "qp_transition_failed";
    e.cause = has(msg, "Invalid argument") || has(msg, " 22")
                  ? "the QP was rejected on its way to RTR: the GID index does not fit the port's "
                    "link layer (a RoCE v1 or empty GID where RoCE v2 is needed), or the path MTU "
                    "does not match"
                  : "moving the QP through INIT/RTR/RTS failed";
    e.fix = "set NCCL_IB_GID_INDEX to the port's RoCE v2 GID (fabcheck node shows "
            "roce_v2_gid_index; commonly 3), or leave it unset on NCCL >= 2.21, which selects it";
  } else if (has(msg, "ibv_create_cq") && has_ci(msg, "fail")) {
    // Seen from NCCL's own IB transport ("Call to ibv_create_cq failed") and through external
    // net plugins (NET/IBext, SHARP): the cause is the same device-level refusal.
    e.kind = "cq_create_failed";
    e.cause = has(msg, "Cannot allocate memory") || has(msg, " 12")
                  ? "creating a completion queue ran out of lockable memory (RLIMIT_MEMLOCK) or of "
                    "the device's CQ entries"
                  : "creating a completion queue failed: the device's CQ limits (max_cq, max_cqe) "
                    "are exhausted by the processes sharing it, RLIMIT_MEMLOCK is too low to pin the "
                    "ring, or the device is unusable here (a container without /dev/infiniband, a "
                    "port or firmware in error)";
    e.fix = "ulimit -l unlimited (limits.conf, LimitMEMLOCK=infinity, --ulimit memlock=-1); compare "
            "`ibv_devinfo -v` max_cq/max_cqe with the ranks per HCA; pass /dev/infiniband into the "
            "container; check dmesg for mlx5 errors";
  } else if (has(msg, "ibv_create_qp") && has_ci(msg, "fail")) {
    e.kind = "qp_create_failed";
    e.cause = has(msg, "Cannot allocate memory") || has(msg, " 12")
                  ? "creating a queue pair ran out of lockable memory (RLIMIT_MEMLOCK) or of the "
                    "device's QP resources"
                  : "creating a queue pair failed: the device's max_qp is exhausted (ranks x peers "
                    "x NCCL_IB_QPS_PER_CONNECTION QPs per HCA), a requested work-request or inline "
                    "size exceeds the device's limits, or the device is unusable here";
    e.fix = "lower NCCL_IB_QPS_PER_CONNECTION (or the ranks per HCA); ulimit -l unlimited; compare "
            "`ibv_devinfo -v` max_qp/max_qp_wr with what the job needs; check dmesg for mlx5 errors";
  } else if (has(msg, "libibverbs") &&
             (has_ci(msg, "failed to open") || has_ci(msg, "cannot open") ||
              has_ci(msg, "not found") || has(msg, "No such file"))) {
    e.kind = "libibverbs_missing";
    e.cause = "libibverbs could not be loaded: NCCL disables its IB transport and uses sockets";
    e.fix = "install rdma-core (libibverbs1, ibverbs-providers) in the image or on the node; "
            "check `ldconfig -p | grep ibverbs`";
  } else if ((has(msg, "NET/Plugin") || has(msg, "NET/OFI")) &&
             (has_ci(msg, "fail") || has_ci(msg, "unable") || has_ci(msg, "error") ||
              has(msg, "returned"))) {
    e.kind = "plugin_init_failed";
    e.cause = "the network plugin did not load or initialise: NCCL falls back to its internal "
              "IB or Socket transport";
    e.fix = "check the plugin's dependencies (ldd libnccl-net.so; libfabric and FI_PROVIDER for "
            "aws-ofi-nccl), NCCL_NET_PLUGIN and LD_LIBRARY_PATH";
  } else if (has_ci(msg, "no socket interface found") || has(msg, "no interface found")) {
    e.kind = "no_socket_interface";
    e.cause = "NCCL found no usable IP interface (NCCL_SOCKET_IFNAME matches nothing running)";
    e.fix = "run `fabcheck node` and set NCCL_SOCKET_IFNAME to the interface it recommends";
  } else {
    e.kind = "nccl_warning";
    e.cause = "an NCCL warning fabcheck does not classify";
    e.fix = "read the surrounding lines; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET";
  }
  return e;
}

// "[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"
void parse_ib_using(const std::string& msg, NcclLogSummary& s) {
  static const std::regex dev(R"(\[(\d+)\]([^\s:\[\]]+):(\d+)/(IB|RoCE))");
  auto semi = msg.find("; OOB ");
  std::string devs = msg.substr(0, semi);
  s.hcas.clear();
  s.hca_link_layers.clear();
  for (std::sregex_iterator it(devs.begin(), devs.end(), dev), end; it != end; ++it) {
    s.hcas.push_back((*it)[2].str() + ":" + (*it)[3].str());
    s.hca_link_layers.push_back((*it)[4].str());
  }
  if (semi != std::string::npos) s.ib_oob_interface = trim_copy(msg.substr(semi + 6));
}

}  // namespace

NcclLogSummary parse_nccl_log(const std::string& text) {
  NcclLogSummary s;
  static const std::regex version(R"(NCCL version (\d+\.\d+\.\d+[^\s]*))");
  static const std::regex channel(R"((Channel|Ring) \d+(/\d+)? : .*via NET/(.+)/(\d+)(/GDRDMA)?)");
  static const std::regex socket_if(R"(\[\d+\]([^\s\[\]]+))");
  static const std::regex plugin_loaded(R"(NET/Plugin ?: ?Loaded net plugin (.+?)( \(v\d+\))?$)");
  std::set<int> net_devices_used;
  std::optional<int> using_network_line;
  // NCCL 2.4-2.7 print no `Using network` line: the network is what the init lines say.
  std::optional<int> ib_using_line, socket_using_line, last_socket_using_line, ib_no_device_line;
  size_t start = 0;
  int lineno = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = utf8_clean(text.substr(start, nl - start));
    if (nl == text.size() && line.empty()) break;  // the final newline ends the last line
    start = nl + 1;
    ++lineno;
    // NCCL formats a log line into a 1024-byte buffer (ncclDebugLog): anything much longer is
    // not NCCL's, and std::regex recursion on megabyte lines could exhaust the stack.
    if (line.size() > kMaxLineChars) continue;
    if (!has(line, "NCCL") && !has(line, "NET/") && !has(line, "Channel") && !has(line, "Ring"))
      continue;
    bool is_warn = false;
    std::string msg = message_of(line, &is_warn);
    std::smatch m;
    if (!s.version && std::regex_search(msg, m, version)) s.version = m[1].str();
    if (msg.rfind("Using network ", 0) == 0) {
      std::string net = trim_copy(msg.substr(14));
      s.networks_seen.push_back(net);
      s.network = net;
      using_network_line = lineno;
    } else if (msg.rfind("NET/IB : Using", 0) == 0 || msg.rfind("NET/IB: Using", 0) == 0) {
      parse_ib_using(msg, s);
      if (!ib_using_line) ib_using_line = lineno;
    } else if (msg.rfind("NET/Socket : Using", 0) == 0 || msg.rfind("NET/Socket: Using", 0) == 0) {
      s.socket_interfaces.clear();
      if (!socket_using_line) socket_using_line = lineno;
      last_socket_using_line = lineno;
      std::string rest = msg.substr(msg.find("Using") + 5);
      for (std::sregex_iterator it(rest.begin(), rest.end(), socket_if), end; it != end; ++it)
        s.socket_interfaces.push_back((*it)[1].str());
    } else if (msg.rfind("Bootstrap : Using", 0) == 0 || msg.rfind("Bootstrap: Using", 0) == 0) {
      std::string v = trim_copy(msg.substr(msg.find("Using") + 5));
      if (v.rfind("[0]", 0) == 0) v = v.substr(3);  // 2.3-2.6 print "Using [0]eth0:..."
      s.bootstrap_interface = v;
    } else if (has(msg, "NET/IB : No device found") || has(msg, "NET/IB: No device found")) {
      s.ib_no_device = true;
      if (!ib_no_device_line) ib_no_device_line = lineno;
    } else if (has(msg, "NCCL_IB_DISABLE set by environment to")) {
      s.ib_disabled = msg.find(" to 0") == std::string::npos;
    } else if (std::regex_search(msg, m, plugin_loaded)) {
      s.plugin = trim_copy(m[1].str());
    } else if (has(msg, "NET/OFI Using aws-ofi-nccl") || has(msg, "NET/OFI Initializing aws-ofi-nccl")) {
      s.plugin = "aws-ofi-nccl";
    } else if (has(msg, "No plugin found") || has(msg, "Could not find: libnccl-net") ||
               (has(msg, "returned 2 ") && has(msg, "No such file or directory"))) {
      s.plugin_absent = true;  // not an error: NCCL uses its internal IB/Socket transports
      continue;
    } else if (std::regex_search(msg, m, channel)) {
      ++s.net_channel_lines;
      bool gdr = m[5].matched;
      s.gdr = s.gdr.value_or(false) || gdr;
      net_devices_used.insert(std::stoi(m[4].str().substr(0, 6)));
      if (!using_network_line) s.network = trim_copy(m[3].str());
      continue;
    } else if (has(msg, " via P2P") || has(msg, " via SHM") || has(msg, " via direct")) {
      ++s.intra_node_channel_lines;
      continue;
    }
    bool error_like = is_warn || (has(msg, "ibv_") && has_ci(msg, "failed")) ||
                      (has(msg, "NET/Plugin") && (has_ci(msg, "fail") || has(msg, "returned"))) ||
                      (has(msg, "libibverbs") && has_ci(msg, "failed"));
    if (error_like) {
      NcclLogError e = classify_error(msg, lineno);
      if (e.kind == "libibverbs_missing") s.ib_disabled = true;
      s.errors.push_back(std::move(e));
    }
  }
  s.lines = lineno;
  if (using_network_line)
    s.network_evidence = "Using network " + *s.network + " (line " +
                         std::to_string(*using_network_line) + ")";
  else if (s.network)
    s.network_evidence = "channel lines via NET/" + *s.network;
  // Neither a `Using network` line nor channel lines (NCCL 2.4-2.7, or a log cut before the
  // channels were set up): NCCL initialised IB first and fell back to its socket transport only
  // when IB had no device or was disabled, so the init lines name the network. NCCL 2.4's
  // bootstrap prints its own `NET/Socket : Using` before the IB line: a socket line only counts
  // against IB when it comes after it.
  if (!s.network && !s.plugin) {
    const auto at = [](const char* what, int line) { return std::string(what) + " (line " + std::to_string(line) + ")"; };
    if (socket_using_line && (ib_no_device_line || s.ib_disabled || !ib_using_line)) {
      s.network = "Socket";
      s.network_evidence = (ib_no_device_line ? at("NET/IB : No device found", *ib_no_device_line) + ", then "
                            : s.ib_disabled   ? std::string("IB disabled, then ")
                                              : std::string("no NET/IB line, ")) +
                           at("NET/Socket : Using", *socket_using_line) + "; NCCL < 2.8 prints no `Using network`";
    } else if (ib_using_line && !ib_no_device_line && !s.ib_disabled &&
               !(last_socket_using_line && *last_socket_using_line > *ib_using_line)) {
      s.network = "IB";
      s.network_evidence = at("NET/IB : Using", *ib_using_line) + " and no socket transport initialised after it; "
                           "NCCL < 2.8 prints no `Using network`";
    }
  }
  // NCCL reports RoCE as network "IB"; the link layer is in the `NET/IB : Using` list. Decide by
  // the devices the channels used when known, else by all listed devices.
  if (s.network == std::string("IB") && !s.hcas.empty()) {
    bool all_roce = true, any = false;
    for (size_t i = 0; i < s.hcas.size(); ++i) {
      if (!net_devices_used.empty() && !net_devices_used.count(static_cast<int>(i))) continue;
      any = true;
      all_roce = all_roce && s.hca_link_layers[i] == "RoCE";
    }
    if (any && all_roce) s.network = "RoCE";
  }
  return s;
}

Json to_json(const NcclLogSummary& s) {
  auto opt = [](const std::optional<std::string>& v) { return v ? Json(*v) : Json(nullptr); };
  Json j;
  j["version"] = opt(s.version);
  j["network"] = opt(s.network);
  j["network_evidence"] = opt(s.network_evidence);
  j["networks_seen"] = s.networks_seen;
  j["hcas"] = s.hcas;
  j["hca_link_layers"] = s.hca_link_layers;
  j["ib_oob_interface"] = opt(s.ib_oob_interface);
  j["socket_interfaces"] = s.socket_interfaces;
  j["bootstrap_interface"] = opt(s.bootstrap_interface);
  j["plugin"] = opt(s.plugin);
  j["plugin_absent"] = s.plugin_absent;
  j["gdr"] = s.gdr ? Json(*s.gdr) : Json(nullptr);
  j["net_channel_lines"] = s.net_channel_lines;
  j["intra_node_channel_lines"] = s.intra_node_channel_lines;
  j["ib_disabled"] = s.ib_disabled;
  j["ib_no_device"] = s.ib_no_device;
  j["errors"] = Json::array();
  for (const auto& e : s.errors)
    j["errors"].push_back({{"line", e.line}, {"kind", e.kind}, {"text", e.text},
                           {"cause", e.cause}, {"fix", e.fix}});
  j["lines"] = s.lines;
  return j;
}

}  // namespace fabkit::nccl_log
