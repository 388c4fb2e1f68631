#include "fabric/nccl_log/nccl_failure_kinds.h"
#include "fabric/nccl_log/nccl_log.h"

namespace fabkit::nccl_log {
namespace {

std::string join(const std::vector<std::string>& v, const char* sep = " ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

bool same_network(const std::string& a, const std::string& b) {
  auto lower = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  return lower(a) == lower(b);
}

std::string where(const NcclLogError& e) {
  return (e.source.empty() ? "" : e.source + ":") + "line " + std::to_string(e.line);
}

std::string first_said(const NcclLogError& e) {
  return (e.who.empty() ? std::string("the log") : e.who) + " at " + where(e) +
         (e.peer.empty() ? "" : ", peer " + e.peer) + (e.detail.empty() ? "" : ", " + e.detail);
}

std::string others(const NcclFailure& f) {
  const size_t n = f.said_by.size();
  std::string s = std::to_string(f.count) + " line" + (f.count == 1 ? "" : "s");
  if (n > 1) s += " from " + std::to_string(n) + (n == 64 ? "+" : "") + " ranks/processes";
  return s;
}

// One finding per failure kind: the cause with its meaning, ordered causes and fix; the others
// as consequences of it (the first error in time is the cause: the rest is what it did).
void failure_findings(const NcclLogSummary& s, std::vector<Finding>& out) {
  const NcclFailure* cause = nullptr;
  for (const auto& f : s.failures)
    if (f.kind == s.cause_kind.value_or("")) cause = &f;
  for (const auto& f : s.failures) {
    const FailureKind& k = failure_kind(f.kind);
    const NcclLogError& e = s.errors.at(f.first_error);
    const std::string subject = e.who.empty() ? where(e) : e.who;
    if (&f == cause) {
      std::string causes;
      for (size_t i = 0; i < k.causes.size(); ++i)
        causes += (i ? "; " : "") + std::to_string(i + 1) + ") " + k.causes[i];
      std::string msg = std::string(k.title) + " — " + k.meaning + ". First said by " +
                        first_said(e) + ": \"" + e.text + "\" (" + others(f) +
                        (s.order_by_time ? ", first by time" : ", first in the log") +
                        "). Likely causes: " + causes;
      if (s.failures.size() > 1) msg += ". The other errors in this log are consequences of it";
      const Severity sev = f.kind == "nccl_warning" ? Severity::kWarn : Severity::kFail;
      out.push_back(Finding{sev, "nccl_log." + f.kind, subject, msg, k.fix});
      continue;
    }
    std::string msg = std::string(k.title) + " (" + others(f) + ", first by " + first_said(e) +
                      ": \"" + e.text + "\")";
    if (cause) {
      const NcclLogError& ce = s.errors.at(cause->first_error);
      msg += f.role == "condition"
                 ? "; a condition beside the failure (nccl_log." + cause->kind + ")"
                 : "; a consequence of nccl_log." + cause->kind + " (" + ce.who + " at " +
                       where(ce) + "), not the cause";
    }
    out.push_back(warn("nccl_log." + f.kind, subject, msg,
                       f.role == "condition" ? std::string(k.fix)
                                             : "fix nccl_log." + (cause ? cause->kind : f.kind) +
                                                   " first; then: " + k.fix));
  }
}

// The IB async events, each with its port and count, benign or not: the one trace of a subnet
// manager's or a link's event in a job's log. Those that break a job are also failures
// (ib_async_error); this finding says what the others were.
void ib_event_finding(const NcclLogSummary& s, std::vector<Finding>& out) {
  if (s.ib_events.empty()) return;
  bool all_benign = true;
  std::string msg = "IB async events: ";
  for (size_t i = 0; i < s.ib_events.size(); ++i) {
    const NcclIbEvent& e = s.ib_events[i];
    all_benign &= e.benign;
    msg += (i ? "; " : "") + e.event + (e.device.empty() ? "" : " on " + e.device) + " x" +
           std::to_string(e.count) + " (" + (e.benign ? "benign: " : "not benign: ") + e.meaning +
           "; first by " + (e.first_who.empty() ? "the log" : e.first_who) + " at " +
           (e.source.empty() ? "" : e.source + ":") + "line " + std::to_string(e.first_line) + ")";
  }
  if (s.ib_events_dropped)
    msg += "; " + std::to_string(s.ib_events_dropped) + " more lines of other events or ports";
  if (all_benign)
    out.push_back(info("nccl_log.ib_async_events", "network", msg,
                       "none needed for these; if they recur during jobs, ask whoever runs the "
                       "subnet manager about SM failovers and sweeps (opensm log, UFM events)"));
  else
    out.push_back(warn("nccl_log.ib_async_events", "network", msg,
                       "check `ibstat` port states, `ibqueryerrors`/perfquery counters and dmesg "
                       "(mlx5) on the host that reported them; reseat or replace the cable"));
}

}  // namespace

std::vector<Finding> judge_nccl_log(const NcclLogSummary& s,
                                    std::optional<std::string> expected_network) {
  std::vector<Finding> out;
  const std::string rerun = "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and keep "
                            "the output of every rank";
  if (!s.version && !s.network && s.hcas.empty() && s.socket_interfaces.empty() &&
      s.errors.empty() && s.nccl_lines == 0 && s.torch_nccl_lines == 0) {
    out.push_back(warn("nccl_log.no_nccl_info", "log",
                       "no NCCL INFO lines found in " + std::to_string(s.lines) +
                           " lines: the job ran without NCCL_DEBUG=INFO, or this is not its log",
                       rerun));
    return out;
  }
  failure_findings(s, out);
  ib_event_finding(s, out);

  if (!s.network) {
    std::string what;
    if (s.nccl_lines == 0)
      what =
          "only PyTorch's NCCL errors, none of NCCL's own lines: the network is not in this "
          "text";
    else if (s.plugin_lines > 0 && s.plugin_lines * 2 >= s.nccl_lines)
      what = "a net plugin's init lines" +
             (s.plugin ? " (plugin " + *s.plugin + " loaded)" : std::string()) +
             " and no network decision yet: the log ends before NCCL chose its network";
    else
      what =
          "no `Using network` line and no network channel line: the log ends before NCCL "
          "connected its channels, or all ranks were on one node";
    if (!s.socket_interfaces.empty())
      what +=
          "; NET/Socket lines alone do not prove the network (they are printed for bootstrap "
          "too)";
    out.push_back(info("nccl_log.network_unknown", "log", what, rerun));
    return out;
  }
  const std::string& net = *s.network;
  if (net == "Socket" && !s.hcas.empty()) {
    out.push_back(fail("nccl_log.socket_fallback", "network",
                       "NCCL listed RDMA devices (" + join(s.hcas) + ") but used TCP sockets (" +
                           s.network_evidence.value_or("") + ")" +
                           (s.ib_disabled ? "; NCCL_IB_DISABLE was set" : ""),
                       "unset NCCL_IB_DISABLE and NCCL_NET=Socket; check NCCL_IB_HCA with "
                       "`fabcheck node`"));
  } else if (net == "Socket" && (s.ib_disabled || s.ib_no_device)) {
    out.push_back(warn("nccl_log.socket_only", "network",
                       std::string("NCCL used TCP sockets: ") +
                           (s.ib_disabled ? "IB was disabled (NCCL_IB_DISABLE or no libibverbs)"
                                          : "NET/IB found no device") +
                           "; sockets carry a fraction of an RDMA fabric's bandwidth",
                       s.ib_disabled ? "unset NCCL_IB_DISABLE / install libibverbs"
                                     : "check `ibv_devinfo` on the node and that the container "
                                       "sees /dev/infiniband"));
  } else if (net == "Socket" && !(expected_network && same_network(*expected_network, "Socket"))) {
    out.push_back(warn("nccl_log.socket_only", "network",
                       "NCCL used TCP sockets (" + s.network_evidence.value_or("") + ")",
                       "if the nodes have RDMA NICs, check `fabcheck node` for why IB is unused"));
  }
  if (net != "Socket" && s.gdr == false)
    out.push_back(warn("nccl_log.no_gdr", "network",
                       "network channels over " + net + " do not use GPUDirect RDMA (no /GDRDMA in "
                       "the channel lines): data is staged through host memory",
                       "load nvidia-peermem (or use DMA-BUF with NCCL_DMABUF_ENABLE=1), keep GPU "
                       "and NIC under one PCIe switch, check NCCL_NET_GDR_LEVEL"));
  if (net != "Socket" && !s.socket_interfaces.empty())
    out.push_back(info("nccl_log.bootstrap_socket_lines", "network",
                       "NET/Socket lines (" + join(s.socket_interfaces) + ") are bootstrap/OOB "
                       "traffic; the data went over " + net + " (" +
                           s.network_evidence.value_or("") + ")"));
  if (s.ofi_provider &&
      (s.ofi_provider->rfind("tcp", 0) == 0 || s.ofi_provider->rfind("sockets", 0) == 0))
    out.push_back(warn("nccl_log.ofi_tcp_provider", "network",
                       "the OFI plugin runs over libfabric provider " + *s.ofi_provider +
                           ": TCP through the plugin (not NCCL's socket transport, not EFA/RDMA)",
                       "on EFA nodes set FI_PROVIDER=efa and check `fi_info -p efa`; on others "
                       "this is expected"));
  if (expected_network && !same_network(*expected_network, net) &&
      !(same_network(*expected_network, "IB") && net == "RoCE"))
    out.push_back(fail("nccl_log.unexpected_network", "network",
                       "expected " + *expected_network + " but NCCL used " + net + " (" +
                           s.network_evidence.value_or("") + ")",
                       "see the other findings for the cause; `fabcheck node` checks the "
                       "NCCL settings of each node"));
  return out;
}

}  // namespace fabkit::nccl_log
