#include "fabric/nccl_log/nccl_log.h"

namespace fabkit::nccl_log {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

bool same_network(const std::string& a, const std::string& b) {
  auto lower = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  return lower(a) == lower(b);
}

}  // namespace

std::vector<Finding> judge_nccl_log(const NcclLogSummary& s,
                                    std::optional<std::string> expected_network) {
  std::vector<Finding> out;
  const std::string rerun = "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and keep "
                            "the output of every rank";
  if (!s.version && !s.network && s.hcas.empty() && s.socket_interfaces.empty() &&
      s.errors.empty()) {
    out.push_back(warn("nccl_log.no_nccl_info", "log",
                       "no NCCL INFO lines found in " + std::to_string(s.lines) +
                           " lines: the job ran without NCCL_DEBUG=INFO, or this is not its log",
                       rerun));
    return out;
  }
  for (const auto& e : s.errors) {
    std::string subject = "line " + std::to_string(e.line);
    if (e.kind == "nccl_warning")
      out.push_back(warn("nccl_log.nccl_warning", subject, e.text, e.fix));
    else
      out.push_back(fail("nccl_log." + e.kind, subject, e.cause + ": " + e.text, e.fix));
  }

  if (!s.network) {
    out.push_back(info("nccl_log.network_unknown", "log",
                       "no `Using network` line and no network channel line: the log ends before "
                       "NCCL connected its channels, or all ranks were on one node" +
                           std::string(s.socket_interfaces.empty()
                                           ? ""
                                           : "; NET/Socket lines alone do not prove the network "
                                             "(they are printed for bootstrap too)"),
                       rerun));
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
