// Pre-connection diagnoses: rdma-core's rc_pingpong just fails on these (or hangs until the
// retry counter runs out); we say what is wrong and how to fix it.
#include <cerrno>
#include <cmath>
#include <algorithm>

#include "fabric/rdma/rc_types.h"
#include "verbs/verbs_strings.h"

namespace fabkit::fabric::rdma {
namespace {

bool is_ib(const RcEndpointInfo& e) { return e.link_layer == "InfiniBand"; }

std::string where(const RcEndpointInfo& e, const char* side) {
  return std::string(side) + " " + (e.device.empty() ? "endpoint" : e.device);
}

}  // namespace

std::vector<Finding> diagnose_rc_pair(const RcEndpointInfo& l, const RcEndpointInfo& r) {
  std::vector<Finding> out;
  std::string subj = l.device.empty() ? "local" : l.device;
  if (l.link_layer != r.link_layer) {
    out.push_back(fail("rdma.rc.link_layer_mismatch", subj,
                       where(l, "local") + " is " + l.link_layer + " but " + where(r, "peer") +
                           " is " + r.link_layer + "; RDMA cannot cross between them",
                       "pick HCAs of the same kind on both nodes (--hca / NCCL_IB_HCA)"));
    return out;
  }
  if (is_ib(l)) {
    for (const auto* e : {&l, &r})
      if (e->lid == 0)  // a GRH does not help: IB switches forward by LID
        out.push_back(fail("rdma.rc.lid_zero", subj,
                           where(*e, e == &l ? "local" : "peer") +
                               " has LID 0: no subnet manager has configured its port",
                           "start a subnet manager: 'systemctl start opensm' (or check the "
                           "switch's SM); 'ibstat' must show a non-zero Base lid"));
    if (l.gid_index >= 0 && r.gid_index >= 0 && !verbs::is_zero(l.gid) && !verbs::is_zero(r.gid) &&
        !std::equal(l.gid.begin(), l.gid.begin() + 8, r.gid.begin()))
      out.push_back(warn("rdma.rc.subnet_prefix_mismatch", subj,
                         "local GID " + verbs::format_gid(l.gid) + " and peer GID " +
                             verbs::format_gid(r.gid) +
                             " have different subnet prefixes: traffic needs an IB router",
                         "use HCAs on the same IB subnet, or configure the router and GRH "
                         "routing on both subnets"));
  } else {
    for (const auto* e : {&l, &r}) {
      // Both sides see a null GID; the code says whose it is, so the pair report names the
      // host that has it (fabric/pair/rdma_rc_plan.cc), not the one that noticed.
      if (e->gid_index < 0 || verbs::is_zero(e->gid))
        out.push_back(fail(e == &l ? "rdma.rc.null_gid" : "rdma.rc.peer_null_gid", subj,
                           where(*e, e == &l ? "local" : "peer") + " has no usable GID at index " +
                               std::to_string(e->gid_index) +
                               "; RoCE addresses every packet by GID",
                           "assign an IP address to the port's netdev and use a RoCE v2 index "
                           "('fabcheck node' shows roce_v2_gid_index; 'show_gids'); where "
                           "NCCL_IB_GID_INDEX is set on that host, NCCL and this test use it: "
                           "correct it or unset it (NCCL >= 2.21 picks a RoCE v2 GID itself)"));
    }
    if (!out.empty()) return out;
    if (l.gid_type != r.gid_type)
      out.push_back(fail("rdma.rc.gid_type_mismatch", subj,
                         "local GID index " + std::to_string(l.gid_index) + " is " + l.gid_type +
                             " but the peer's index " + std::to_string(r.gid_index) + " is " +
                             r.gid_type + "; v1 (Ethernet frames) and v2 (UDP/IP) do not interoperate",
                         "use a RoCE v2 GID index on both sides (NCCL_IB_GID_INDEX, commonly 3; "
                         "'show_gids' lists them)"));
    else if (verbs::is_ipv4_mapped(l.gid) != verbs::is_ipv4_mapped(r.gid))
      out.push_back(fail("rdma.rc.gid_family_mismatch", subj,
                         "local GID " + verbs::format_gid(l.gid) + " and peer GID " +
                             verbs::format_gid(r.gid) + " are of different IP families (IPv4 vs IPv6)",
                         "use GIDs of the same family on both sides: the IPv4-mapped RoCE v2 entry "
                         "(::ffff:a.b.c.d) is the usual choice"));
    else if (l.gid_type == "RoCE v1")
      out.push_back(warn("rdma.rc.roce_v1", subj,
                         "both sides use RoCE v1 GIDs: not routable beyond one L2 segment, and NCCL "
                         "prefers RoCE v2",
                         "use a RoCE v2 GID index (NCCL_IB_GID_INDEX; 'show_gids')"));
  }
  if (l.mtu != r.mtu && l.mtu > 0 && r.mtu > 0)
    out.push_back(info("rdma.rc.mtu_mismatch", subj,
                       "active MTU " + std::to_string(l.mtu) + " here, " + std::to_string(r.mtu) +
                           " on the peer: the connection uses " +
                           std::to_string(std::min(l.mtu, r.mtu)),
                       is_ib(l) ? "set the same MTU on the subnet manager's partition for both ports"
                                : "set the same interface MTU on both netdevs (e.g. 'ip link set "
                                  "dev <netdev> mtu 9000' for a 4096-byte RoCE MTU)"));
  return out;
}

Finding diagnose_reg_mr_failure(const SysError& e, const std::string& subject) {
  if (e.err == EPERM || e.err == ENOMEM)
    return fail("rdma.rc.reg_mr_failed", subject,
                e.to_string() + ": registering memory pins it, and the locked-memory limit "
                                "(RLIMIT_MEMLOCK) is too low; this is NCCL's \"Call to ibv_reg_mr "
                                "failed\"",
                "set 'ulimit -l unlimited': add '* soft memlock unlimited' and '* hard memlock "
                "unlimited' to /etc/security/limits.conf; for slurmd set LimitMEMLOCK=infinity "
                "(systemctl edit slurmd); in containers 'docker run --ulimit memlock=-1'");
  return fail("rdma.rc.reg_mr_failed", subject, e.to_string(),
              "check 'dmesg' for the HCA driver's error and that the buffer size is supported");
}

std::string wc_status_name(int s) {
  static const char* kNames[] = {
      "SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR", "WR_FLUSH_ERR",
      "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR",
      "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR",
      "REM_ABORT_ERR", "INV_EECN_ERR", "INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR",
      "GENERAL_ERR", "TM_ERR", "TM_RNDV_INCOMPLETE"};
  std::string name = s >= 0 && s < static_cast<int>(sizeof kNames / sizeof *kNames) ? kNames[s] : "unknown";
  return name + " (" + std::to_string(s) + ")";
}

std::optional<double> percentile(std::vector<double> v, double p) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest sample with at least p% of samples at or below it.
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[rank == 0 ? 0 : rank - 1];
}

}  // namespace fabkit::fabric::rdma
