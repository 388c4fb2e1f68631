// NCCL's init lines and the network decision. Line formats come from NCCL's own INFO/WARN calls
// (see tests/fixtures/nccl_log/README.md):
//   init.cc       "NCCL version %s"             "Using network %s"
//   bootstrap.cc  "Bootstrap : Using %s:%s"
//   net_ib.cc     "NET/IB : Using [%d]%s:%d/%s ... ; OOB %s:%s"   "NET/IB : No device found."
//   net_socket.cc "NET/Socket : Using [%d]%s:%s ..."
//   transport.cc  "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s" (2.3-2.6: "Ring
//   %02d")
#include <cctype>
#include <regex>

#include "fabric/nccl_log/nccl_log_parser.h"
#include "fabric/nccl_log/nccl_log_scan.h"
#include "fabric/nccl_log/nccl_log_text.h"

namespace fabkit::nccl_log::detail {

namespace {

// The word starting at or after `from` (spaces skipped), up to the next space.
std::string first_word(const std::string& msg, size_t from) {
  if (from > msg.size()) return "";
  size_t b = msg.find_first_not_of(' ', from);
  if (b == std::string::npos) return "";
  return msg.substr(b, msg.find(' ', b) == std::string::npos ? std::string::npos
                                                              : msg.find(' ', b) - b);
}

}  // namespace

void Parser::note_network_seen(const std::string& net) {
  if (s_.networks_seen.size() < kMaxNetworksSeen)
    s_.networks_seen.push_back(net);
  else
    ++s_.networks_seen_dropped;
}

void Parser::nccl_facts(const LogLine& l, const std::string& msg, int lineno, Process* p) {
  static const std::regex version(R"(NCCL version (\d+\.\d+\.\d+[^\s]*))");
  NcclChannelLine channel;
  static const std::regex socket_if(R"(\[\d+\]([^\s\[\]]+))");
  static const std::regex plugin_loaded(R"(NET/Plugin ?: ?Loaded net plugin (.+?)( \(v\d+\))?$)");
  std::smatch m;
  // Gates: each has() is a scan of the line, and this runs on every NCCL line of logs that reach
  // hundreds of MB (the budget is 50 ms per MB): ask the rare questions only of lines that can
  // answer them.
  const bool net = has(msg, "NET/");
  const bool plugin = net || has(msg, "lugin");
  if (!s_.version && has(msg, "NCCL version ") && std::regex_search(msg, m, version))
    s_.version = m[1].str();
  if (starts(msg, "Using network ")) {
    std::string net = network_name(trim_copy(sv(msg).substr(14)));
    note_network_seen(net);
    s_.network = net;
    using_network_line_ = lineno;
    if (p && p->view != SIZE_MAX) s_.ranks[p->view].network = net;
  } else if (starts(msg, "Using internal Network ")) {  // NCCL 2.2-2.3's network line
    std::string net = trim_copy(sv(msg).substr(23));
    note_network_seen(net);
    s_.network = net;
    using_network_line_ = lineno;
    if (p && p->view != SIZE_MAX) s_.ranks[p->view].network = net;
  } else if (starts(msg, "NET/IB : Using") || starts(msg, "NET/IB: Using") ||
             starts(msg, "NET/IB: [") || starts(msg, "NET/IB : [")) {
    // 2.3's "NET/IB : Using interface ib0 for sideband communication" lists no device: not it.
    NcclLogSummary probe;
    parse_ib_using(msg, probe);
    if (!probe.hcas.empty()) {
      s_.hcas = std::move(probe.hcas);
      s_.hca_link_layers = std::move(probe.hca_link_layers);
      if (probe.ib_oob_interface) s_.ib_oob_interface = probe.ib_oob_interface;
      if (!ib_using_line_) ib_using_line_ = lineno;
      if (p && !p->ib_using_line) p->ib_using_line = lineno;
    }
  } else if (starts(msg, "NET/Socket : Using") || starts(msg, "NET/Socket: Using")) {
    s_.socket_interfaces.clear();
    if (!socket_using_line_) socket_using_line_ = lineno;
    if (p) p->last_socket_using_line = lineno;
    std::string rest = msg.substr(msg.find("Using") + 5);
    for (std::sregex_iterator it(rest.begin(), rest.end(), socket_if), end; it != end; ++it)
      s_.socket_interfaces.push_back((*it)[1].str());
  } else if (starts(msg, "Bootstrap : Using") || starts(msg, "Bootstrap: Using")) {
    std::string v = trim_copy(sv(msg).substr(msg.find("Using") + 5));
    if (v.rfind("[0]", 0) == 0) v = v.substr(3);  // 2.3-2.6 print "Using [0]eth0:..."
    s_.bootstrap_interface = v;
  } else if (has(msg, "evice") &&
             (has(msg, "NET/IB : No device found") || has(msg, "NET/IB: No device found") ||
              has(msg, "call to devices() returned 0 devices"))) {
    s_.ib_no_device = true;
    if (!ib_no_device_line_) ib_no_device_line_ = lineno;
  } else if (starts(msg, "NCCL_IB_DISABLE set by environment to")) {
    s_.ib_disabled = msg.find(" to 0") == std::string::npos;
  } else if (plugin && has(msg, "Loaded net plugin") && std::regex_search(msg, m, plugin_loaded)) {
    s_.plugin = trim_copy(m[1].str());
  } else if (plugin && (starts(msg, "Successfully loaded external network plugin ") ||
                        starts(msg, "Plugin Path : "))) {
    // 2.23+: "Successfully loaded external network plugin /opt/.../libnccl-net.so" (the path
    // dlinfo gives, else the name); 2.19-2.22: "Plugin Path : /opt/hpcx/.../libnccl-net.so".
    const size_t at = starts(msg, "Plugin Path : ") ? 14 : 44;
    if (!s_.plugin_path) s_.plugin_path = trim_copy(sv(msg).substr(at));
  } else if (net && (has(msg, "NET/OFI Using aws-ofi-nccl") ||
                     has(msg, "NET/OFI Initializing aws-ofi-nccl"))) {
    // "Initializing " PACKAGE_STRING (aws-ofi-nccl >= 1.6), "Using " PACKAGE_STRING before.
    s_.plugin = "aws-ofi-nccl";
    if (!s_.plugin_version) s_.plugin_version = first_word(msg, msg.find("aws-ofi-nccl") + 12);
  } else if (net && starts(msg, "NET/GPUDirectTCPX ver. ")) {
    // google/nccl-plugin-gpudirecttcpx src/net_tcpx.cc: "NET/" PRODUCT_NAME " ver. " X.Y.Z.SUFFIX
    if (!s_.plugin) s_.plugin = "GPUDirectTCPX";
    std::string v = first_word(msg, 23);
    while (!v.empty() && v.back() == '.') v.pop_back();
    if (!s_.plugin_version && !v.empty()) s_.plugin_version = v;
  } else if (plugin && (has(msg, "No plugin found") || has(msg, "Could not find: libnccl-net") ||
                        (has(msg, "returned 2 ") && has(msg, "No such file or directory")) ||
                        has(msg, "No network plugin found"))) {
    s_.plugin_absent = true;  // not an error: NCCL uses its internal IB/Socket transports
  } else if (net && parse_channel(msg, &channel)) {
    ++s_.net_channel_lines;
    s_.gdr = s_.gdr.value_or(false) || channel.gdr;
    if (net_devices_used_.size() < kMaxNetDevices) net_devices_used_.insert(channel.device);
    if (!using_network_line_) s_.network = channel.network;
  } else if (has(msg, " via ") &&
             (has(msg, " via P2P") || has(msg, " via SHM") || has(msg, " via direct"))) {
    ++s_.intra_node_channel_lines;
  }
  if (net && (has(msg, "NET/Plugin") || has(msg, "NET/OFI"))) ++s_.plugin_lines;
  if (net && has(msg, "NET/OFI") && !s_.plugin) s_.plugin = "aws-ofi-nccl";
  if (net && has(msg, "AWS Libfabric")) ofi_network_named_ = true;
  const size_t prov = net ? msg.find("Selected Provider is ") : std::string::npos;
  const size_t prov2 = net ? msg.find("Selected provider is ") : std::string::npos;
  const size_t pp = prov != std::string::npos ? prov : prov2;
  if (pp != std::string::npos) {
    std::string v = trim_copy(sv(msg).substr(pp + 21));
    s_.ofi_provider = v.substr(0, v.find(' '));
    s_.ofi_provider->erase(std::remove(s_.ofi_provider->begin(), s_.ofi_provider->end(), ','),
                           s_.ofi_provider->end());
  }
  // proxy.cc's "[Proxy Service 1] Failed to execute operation Connect from rank 1": the proxy
  // service of rank N runs in rank N's process.
  if (p && !p->rank && starts(msg, "[Proxy Service ")) {
    sv r = sv(msg).substr(15);
    long v;
    if (scan::read_int(r, &v, 7) && scan::eat(r, ']')) {
      p->rank = static_cast<int>(v);
      if (p->view != SIZE_MAX && !s_.ranks[p->view].rank) s_.ranks[p->view].rank = p->rank;
    }
  }
  // A rank NCCL states for this process: "comm 0x.. rank 5 nranks 8 cudaDev 1".
  if (p && has(msg, " nranks ")) {
    const size_t r = msg.find(" rank ");
    if (r != std::string::npos && r < msg.find(" nranks ")) {
      int v = 0, n = 0;
      for (size_t i = r + 6;
           i < msg.size() && std::isdigit(static_cast<unsigned char>(msg[i])) && n < 7; ++i, ++n)
        v = v * 10 + (msg[i] - '0');
      if (n && !p->rank) {
        p->rank = v;
        if (p->view != SIZE_MAX && !s_.ranks[p->view].rank) s_.ranks[p->view].rank = v;
      }
    }
  }
  // NCCL's error trace at INFO level: "transport/net_socket.cc:368 -> 6".
  if (const int code = trace_return_code(msg)) {
    if (p && p->last_plain_warning >= 0 && !plain_warnings_[p->last_plain_warning].trace_code)
      plain_warnings_[p->last_plain_warning].trace_code = code;
    if (p && !p->trace_code) {
      p->trace_code = code;
      p->trace_line = lineno;
      p->trace_text = msg;
    }
    if (p && has(msg, "bootstrap.c")) {  // bootstrap.cc (2.4+), bootstrap.cu (2.1-2.3)
      p->trace_bootstrap = true;
      if (p->last_plain_warning >= 0 &&
          plain_warnings_[p->last_plain_warning].trace_code)
        plain_warnings_[p->last_plain_warning].trace_bootstrap = true;
      // NCCL 2.1-2.2's bootstrap ran over the network NCCL chose (a trace through net_ib.cu
      // then bootstrap.cu names IB); 2.3's always over sockets: a net_socket trace under the
      // bootstrap names no data network.
      if (inferred_by_trace_ == p && inferred_network_ == std::string("Socket")) {
        inferred_network_.reset();
        inferred_evidence_.reset();
        inferred_by_trace_ = nullptr;
        p->bootstrap_over_socket = true;  // its later net_socket traces are the bootstrap's too
      }
    }
    if (!inferred_network_ && (has(msg, "net_ib.c") ||
                               (has(msg, "net_socket.c") && !(p && p->bootstrap_over_socket)))) {
      inferred_by_trace_ = p;
      inferred_network_ = has(msg, "net_socket.c") ? "Socket" : "IB";
      inferred_evidence_ = "NCCL's error trace through transport/" +
                           std::string(has(msg, "net_socket.c") ? "net_socket" : "net_ib") +
                           " (line " + std::to_string(lineno) + ")";
    }
  }
  if (l.source == LineSource::kNcclWarn && (has(msg, "NET/IB") || has(msg, "NET/Socket")) &&
      !benign_warning(msg))
    infer_from_error(ClassifiedMessage{"completion_error", "", ""}, msg, lineno);
  if (p && l.source == LineSource::kNcclInfo) ++p->info_lines;
  // A net plugin's own lines: "NET/FastSocket : Connected after 1000 retries." (NCCL's internal
  // transports, the plugin loader and aws-ofi-nccl are decided elsewhere).
  if (!plugin_net_name_ && l.source == LineSource::kNcclInfo && starts(msg, "NET/")) {
    const size_t end = msg.find_first_of(" :/", 4);
    const std::string name = msg.substr(4, end == std::string::npos ? end : end - 4);
    if (!name.empty() && name != "IB" && name != "Socket" && name != "Plugin" && name != "OFI" &&
        name != "IBext" && end != std::string::npos && msg.compare(end, 2, " :") == 0)
      plugin_net_name_ = name;
  }
}

// An NET/IB completion error or HCA event names the network even when nothing else in the log
// does: both come from queue pairs and devices the IB transport opened.
void Parser::infer_from_error(const ClassifiedMessage& c, sv msg, int lineno) {
  // The socket transport's receive that met a larger message than posted carried the data.
  if (!inferred_network_ && has(msg, "NET/Socket") && has(msg, "truncated")) {
    inferred_network_ = "Socket";
    inferred_evidence_ = "an NET/Socket transfer error (line " + std::to_string(lineno) + ")";
    return;
  }
  if (!inferred_network_ && has(msg, "NET/Socket") && has(msg, "socket progress error")) {
    inferred_network_ = "Socket";
    inferred_evidence_ = "an NET/Socket transfer error (line " + std::to_string(lineno) + ")";
    return;
  }
  if (inferred_network_ || !has(msg, "NET/IB")) return;
  // Errors of queue pairs, requests and peers the IB transport had set up; not its init failing
  // to find or open a device (then NCCL may still have run over sockets), nor a harmless event.
  const bool event = has(msg, "async") && has(msg, "event");
  const bool transfer = has(msg, "completion") || has(msg, "QP") || has(msg, "CQE") ||
                        has(msg, "req ") || has(msg, "mismatch") || has(msg, "incompatible");
  if (!event && !transfer) return;
  (void)c;
  inferred_network_ = "IB";
  inferred_evidence_ = std::string("an NET/IB ") + (event ? "device event" : "transfer error") +
                       " (line " + std::to_string(lineno) + ")";
}

void Parser::decide_network() {
  if (using_network_line_)
    s_.network_evidence =
        "Using network " + *s_.network + " (line " + std::to_string(*using_network_line_) + ")";
  else if (s_.network)
    s_.network_evidence = "channel lines via NET/" + *s_.network;
  if (!s_.network && plugin_net_name_) {
    s_.network = plugin_net_name_;
    s_.network_evidence =
        "the " + *plugin_net_name_ + " net plugin's own NET/" + *plugin_net_name_ + " lines";
  }
  // Neither a `Using network` line nor channel lines (NCCL 2.4-2.7, or a log cut before the
  // channels were set up): NCCL initialised IB first and fell back to its socket transport only
  // when IB had no device or was disabled, so the init lines name the network. NCCL 2.4's
  // bootstrap prints its own `NET/Socket : Using` before the IB line: a socket line only counts
  // against IB when the same process printed it after its IB line.
  if (!s_.network && !s_.plugin) {
    const auto at = [](const char* what, int line) {
      return std::string(what) + " (line " + std::to_string(line) + ")";
    };
    bool socket_after_ib = false;
    for (const auto& [key, p] : processes_)
      socket_after_ib = socket_after_ib || (p.ib_using_line && p.last_socket_using_line &&
                                            *p.last_socket_using_line > *p.ib_using_line);
    if (ib_using_line_ && !ib_no_device_line_ && !s_.ib_disabled && !socket_after_ib) {
      s_.network = "IB";
      s_.network_evidence = at("NET/IB : Using", *ib_using_line_) +
                            " and no socket transport initialised after it in the same process; "
                            "NCCL < 2.8 prints no `Using network`";
    } else if (socket_using_line_) {
      s_.network = "Socket";
      s_.network_evidence =
          (ib_no_device_line_ ? at("NET/IB : No device found", *ib_no_device_line_) + ", then "
           : s_.ib_disabled   ? std::string("IB disabled, then ")
           : socket_after_ib  ? std::string("NET/IB, then ")
                              : std::string("no NET/IB line, ")) +
          at("NET/Socket : Using", *socket_using_line_) + "; NCCL < 2.8 prints no `Using network`";
    }
  }
  // NET/OFI lines mean the OFI plugin carried the traffic, unless it failed to start (then
  // nothing says what NCCL used) and no line names its network.
  bool ofi_failed = false;
  for (const auto& e : s_.errors) ofi_failed = ofi_failed || e.kind == "plugin_init_failed";
  if (!s_.network && s_.plugin == std::string("aws-ofi-nccl") &&
      (!ofi_failed || ofi_network_named_)) {
    s_.network = "AWS Libfabric";
    s_.network_evidence =
        "NET/OFI lines: the aws-ofi-nccl plugin carried the traffic" +
        (s_.ofi_provider ? " over libfabric provider " + *s_.ofi_provider : std::string());
  }
  if (!s_.network && inferred_network_) {
    s_.network = inferred_network_;
    s_.network_evidence = inferred_evidence_;
  }
  // NCCL reports RoCE as network "IB"; the link layer is in the `NET/IB : Using` list. Decide by
  // the devices the channels used when known, else by all listed devices.
  if (s_.network == std::string("IB") && !s_.hcas.empty()) {
    bool all_roce = true, any = false;
    for (size_t i = 0; i < s_.hcas.size(); ++i) {
      if (!net_devices_used_.empty() && !net_devices_used_.count(static_cast<int>(i))) continue;
      any = true;
      all_roce = all_roce && s_.hca_link_layers[i] == "RoCE";
    }
    if (any && all_roce) s_.network = "RoCE";
  }
}

}  // namespace fabkit::nccl_log::detail
