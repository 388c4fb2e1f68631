// Building and connecting one endpoint, in rdma-core rc_pingpong's order and with its attribute
// values (min_rnr_timer 12, timeout 14, retry_cnt 7, rnr_retry 7, one outstanding RDMA read).
#include <cerrno>
#include <cstdlib>
#include <random>

#include "fabric/rdma/rc_endpoint.h"
#include "verbs/verbs_strings.h"

namespace fabkit::fabric::rdma {
namespace {

constexpr int kAccess = verbs::kAccessLocalWrite | verbs::kAccessRemoteWrite | verbs::kAccessRemoteRead;

bool failed(RcTestResult& r, const SysError& e, const std::string& step) {
  r.reason = step + ": " + e.to_string();
  return false;
}

// The GID to use: the caller's index, else on RoCE the preferred RoCE v2 entry (what NCCL
// picks); InfiniBand within one subnet needs no GID (no GRH), as rc_pingpong's default.
bool choose_gid(RcEndpoint& ep, const RcTestSpec& spec, RcTestResult& r) {
  bool eth = ep.port.link_layer == verbs::LinkLayer::kEthernet;
  int index = spec.gid_index;
  if (index < 0 && eth) {
    std::vector<verbs::GidEntry> gids;
    for (int i = 0; i < ep.port.gid_tbl_len; ++i) {
      auto g = ep.api->query_gid(spec.device, spec.port, i);
      if (ok(g)) gids.push_back(value(g));
    }
    index = verbs::preferred_roce_v2_gid(gids).value_or(-1);
  }
  ep.local.gid_index = index;
  if (index < 0) return true;  // IB without GRH, or RoCE without a v2 GID (diagnosed as null GID)
  auto g = ep.api->query_gid(spec.device, spec.port, index);
  if (!ok(g)) {
    if (error(g).err != ENODATA) return failed(r, error(g), "query GID");
    return true;  // empty slot: the GID stays zero and the pair diagnosis names it
  }
  ep.local.gid = value(g).gid;
  ep.local.gid_type = verbs::to_string(value(g).type);
  return true;
}

}  // namespace

std::optional<IbServiceClass> ib_service_class_from_env(const std::map<std::string, std::string>& vars,
                                                        std::string* error) {
  IbServiceClass c;
  const auto read = [&](const char* name, int max, int& out) {
    auto it = vars.find(name);
    if (it == vars.end() || it->second.empty()) return true;  // NCCL's default: 0
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(it->second.c_str(), &end, 10);
    if (errno != 0 || end == it->second.c_str() || *end != '\0' || v < 0 || v > max) {
      *error = std::string(name) + "=" + it->second + " is not an integer in 0.." + std::to_string(max) +
               "; fix the profile or the environment (NCCL would misread it too)";
      return false;
    }
    out = static_cast<int>(v);
    return true;
  };
  if (!read("NCCL_IB_TC", 255, c.traffic_class) || !read("NCCL_IB_SL", 15, c.service_level)) return std::nullopt;
  return c;
}

bool setup_endpoint(RcEndpoint& ep, const RcTestSpec& spec, size_t buffer_bytes, int queue_depth,
                    RcTestResult& r) {
  std::string subject = spec.device + ":" + std::to_string(spec.port);
  ep.port_num = spec.port;
  ep.traffic_class = spec.traffic_class;
  ep.service_level = spec.service_level;
  ep.local.device = subject;
  auto port = ep.api->query_port(spec.device, spec.port);
  if (!ok(port)) return failed(r, error(port), "query port");
  ep.port = value(port);
  if (ep.port.state != verbs::PortState::kActive) {
    r.diagnoses.push_back(fail("rdma.rc.port_not_active", subject,
                               subject + " is " + verbs::describe(ep.port.state) + " (" +
                                   verbs::describe(ep.port.phys_state) + "); an RC connection needs ACTIVE",
                               "run 'fabcheck node' on this host for the port's diagnosis"));
    r.reason = subject + " is not ACTIVE";
    return false;
  }
  ep.local.link_layer = verbs::to_string(ep.port.link_layer);
  ep.local.lid = ep.port.lid;
  ep.local.mtu = verbs::mtu_bytes(ep.port.active_mtu);
  if (!choose_gid(ep, spec, r)) return false;

  auto ctx = ep.api->open_device(spec.device);
  if (!ok(ctx)) return failed(r, error(ctx), "open device");
  ep.ctx = verbs::Context(ep.api, value(ctx));
  auto pd = ep.api->alloc_pd(ep.ctx.get());
  if (!ok(pd)) return failed(r, error(pd), "allocate PD");
  ep.pd = verbs::ProtectionDomain(ep.api, value(pd));
  ep.buffer.assign(buffer_bytes, 0);
  auto mr = ep.api->reg_mr(ep.pd.get(), ep.buffer.data(), ep.buffer.size(), kAccess);
  if (!ok(mr)) {
    r.diagnoses.push_back(diagnose_reg_mr_failure(error(mr), subject));
    return failed(r, error(mr), "register memory");
  }
  ep.mr_keys = value(mr);
  ep.mr = verbs::MrOwner(ep.api, ep.mr_keys.handle);
  auto cq = ep.api->create_cq(ep.ctx.get(), 2 * queue_depth + 1);
  if (!ok(cq)) return failed(r, error(cq), "create CQ");
  ep.cq = verbs::CompletionQueue(ep.api, value(cq));
  uint32_t qpn = 0;
  auto qp = ep.api->create_rc_qp(ep.pd.get(), ep.cq.get(), queue_depth + 1, queue_depth + 1, &qpn);
  if (!ok(qp)) return failed(r, error(qp), "create QP");
  ep.qp = verbs::QueuePair(ep.api, value(qp));

  verbs::QpAttr init;
  init.qp_state = verbs::QpState::kInit;
  init.pkey_index = 0;
  init.port_num = spec.port;
  init.qp_access_flags = kAccess;
  auto m = ep.api->modify_qp(ep.qp.get(), init,
                             verbs::kQpState | verbs::kQpPkeyIndex | verbs::kQpPort | verbs::kQpAccessFlags);
  if (!ok(m)) return failed(r, error(m), "QP to INIT");

  std::random_device rd;
  ep.local.qpn = qpn;
  ep.local.psn = rd() & 0xffffff;  // PSNs are 24 bits
  ep.local.rkey = ep.mr_keys.rkey;
  ep.local.addr = ep.addr(0);
  return true;
}

bool connect_endpoint(RcEndpoint& ep, int path_mtu, RcTestResult& r) {
  verbs::QpAttr rtr;
  rtr.qp_state = verbs::QpState::kRtr;
  rtr.path_mtu = verbs::mtu_from_bytes(path_mtu).value_or(verbs::Mtu::k1024);
  rtr.dest_qp_num = ep.remote.qpn;
  rtr.rq_psn = ep.remote.psn;
  rtr.max_dest_rd_atomic = 1;
  rtr.min_rnr_timer = 12;
  rtr.port_num = ep.port_num;
  rtr.dlid = ep.remote.lid;
  rtr.sl = ep.service_level;
  // A GRH whenever a GID is in use: always on RoCE, on InfiniBand only when asked for.
  if (ep.local.gid_index >= 0 && !verbs::is_zero(ep.remote.gid)) {
    rtr.is_global = true;
    rtr.dgid = ep.remote.gid;
    rtr.sgid_index = ep.local.gid_index;
    rtr.hop_limit = kGrhHopLimit;
    rtr.traffic_class = ep.traffic_class;
  }
  auto m = ep.api->modify_qp(ep.qp.get(), rtr,
                             verbs::kQpState | verbs::kQpAv | verbs::kQpPathMtu | verbs::kQpDestQpn |
                                 verbs::kQpRqPsn | verbs::kQpMaxDestRdAtomic | verbs::kQpMinRnrTimer);
  if (!ok(m)) return failed(r, error(m), "QP to RTR");

  verbs::QpAttr rts;
  rts.qp_state = verbs::QpState::kRts;
  rts.timeout = 14;  // 4.096 us * 2^14 = 67 ms per retry
  rts.retry_cnt = 7;
  rts.rnr_retry = 7;  // 7 = retry forever while the receiver has no buffer posted
  rts.sq_psn = ep.local.psn;
  rts.max_rd_atomic = 1;
  m = ep.api->modify_qp(ep.qp.get(), rts,
                        verbs::kQpState | verbs::kQpTimeout | verbs::kQpRetryCnt | verbs::kQpRnrRetry |
                            verbs::kQpSqPsn | verbs::kQpMaxQpRdAtomic);
  if (!ok(m)) return failed(r, error(m), "QP to RTS");
  return true;
}

}  // namespace fabkit::fabric::rdma
