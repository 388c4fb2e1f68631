// The I/O of the IB QoS probe: which ports are InfiniBand (from the rdma probe), and three MADs
// per port through MadTransport.
#include <atomic>
#include <cstdio>

#include "probes/ib_qos/ib_qos_facts.h"
#include "probes/ib_qos/mad_transport.h"
#include "probes/nccl_env/nccl_env_facts.h"
#include "probes/rdma/rdma_facts.h"

namespace fabkit::probes {
namespace {

std::atomic<uint32_t> g_tid{1};

std::string status_text(int status) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", status & 0xffff);
  return buf;
}

// One SMP Get to the port's own SMA; false with the port's status and detail set on failure.
bool smp_get(MadTransport& t, IbQosPort& p, uint16_t attr, uint32_t mod, const char* name,
             int timeout_ms, std::array<uint8_t, 64>& data) {
  const uint64_t tid = g_tid++;
  auto reply =
      t.exchange(p.device, p.port, MadDestination{}, build_smp_get(attr, mod, tid), timeout_ms);
  if (!ok(reply)) {
    p.status = "error";
    p.detail = std::string("SubnGet(") + name + "): " + error(reply).to_string();
    return false;
  }
  MadReply r = parse_mad_reply(value(reply), kMgmtClassSmpDirected, attr, tid);
  if (!r.malformed.empty() || r.status != 0) {
    p.status = "error";
    p.detail = std::string("SubnGet(") + name + ") reply: " +
               (r.malformed.empty() ? "MAD status " + status_text(r.status) : r.malformed);
    return false;
  }
  data = r.smp_data;
  return true;
}

IbPathQuery path_query(MadTransport& t, const IbQosPort& p, const std::string& dgid,
                       int timeout_ms) {
  IbPathQuery q;
  q.dgid = dgid;
  const uint64_t tid = g_tid++;
  std::vector<uint8_t> req = build_path_record_get(p.gid, dgid, tid);
  if (req.empty()) {
    q.status = "error";
    q.detail = "not a GID: '" + p.gid + "' -> '" + dgid + "'";
    return q;
  }
  MadDestination to;
  to.to_sa = true;
  to.sm_lid = p.port_info->sm_lid;
  to.sm_sl = p.port_info->sm_sl;
  auto reply = t.exchange(p.device, p.port, to, req, timeout_ms);
  if (!ok(reply)) {
    q.status = "error";
    q.detail = "SubnAdmGet(PathRecord) to SM LID " + std::to_string(to.sm_lid) + ": " +
               error(reply).to_string();
    return q;
  }
  MadReply r = parse_mad_reply(value(reply), kMgmtClassSubnAdm, kAttrPathRecord, tid);
  if (!r.malformed.empty()) {
    q.status = "error";
    q.detail = "SubnAdmGet(PathRecord) reply: " + r.malformed;
    return q;
  }
  if (r.status != 0) {
    // SA status in bits 8..14 (IBA 15.2.1.1): 3 ERR_NO_RECORDS is the SM refusing the path.
    q.status = "no_record";
    q.detail = "the SA answered MAD status " + status_text(r.status) +
               ((r.status >> 8 & 0x7f) == 3 ? " (ERR_NO_RECORDS)" : "");
    return q;
  }
  q.record = decode_path_record(r.sa_data);
  q.status = "ok";
  return q;
}

}  // namespace

void read_ib_port_qos(MadTransport& t, IbQosPort& p, const std::string& peer_gid, int timeout_ms) {
  if (std::string why = t.unavailable(); !why.empty()) {
    p.status = "unavailable";
    p.detail = why;
    return;
  }
  std::array<uint8_t, 64> data{};
  // PortInfo's modifier is the port number on a CA (IBA 14.2.5.6).
  if (!smp_get(t, p, kAttrPortInfo, static_cast<uint32_t>(p.port), "PortInfo", timeout_ms, data))
    return;
  p.port_info = decode_port_info(data);
  // A CA port has one SLtoVL table; modifier 0 (IBA 14.2.5.8: input/output port only on switches).
  if (!smp_get(t, p, kAttrSlToVlTable, 0, "SLtoVLMappingTable", timeout_ms, data)) return;
  p.sl2vl = decode_sl2vl(data);
  p.status = "ok";
  // The SA lives behind the master SM's LID; LID 0 means no SM has configured the port yet.
  if (p.port_info->sm_lid == 0 || p.gid.empty()) return;
  p.paths.push_back(path_query(t, p, p.gid, timeout_ms));
  if (!peer_gid.empty() && peer_gid != p.gid)
    p.paths.push_back(path_query(t, p, peer_gid, timeout_ms));
}

IbQosFacts gather_ib_qos(const ProbeContext& ctx, const RdmaFacts& rdma, const NcclEnvFacts& nccl,
                         const std::string& peer_gid) {
  IbQosFacts f;
  if (const auto* v = find_variable(nccl, "NCCL_IB_SL")) {
    f.nccl_ib_sl = v->value;
    f.nccl_ib_sl_source = v->source;
  }
  for (const auto& d : rdma.devices)
    for (const auto& p : d.ports) {
      if (p.link_layer != verbs::LinkLayer::kInfiniBand) continue;
      IbQosPort q;
      q.device = d.name;
      q.port = p.port;
      q.active = p.state == verbs::PortState::kActive;
      for (const auto& g : p.gids)
        if (g.index == 0) q.gid = g.gid;
      f.ports.push_back(std::move(q));
    }
  std::unique_ptr<MadTransport> transport;
  if (ctx.options.ib_qos_replay) {
    f.source = "replay";
    f.replay_file = ctx.options.ib_qos_replay->string();
    transport = load_replay_mad_transport(*ctx.options.ib_qos_replay);  // UsageError on a bad file
  } else if (ctx.roots.live) {
    f.source = "live";
    transport = make_live_mad_transport(ctx.roots.dev);
  } else {
    f.source = "sysroot";
  }
  if (transport) {
    f.transport_detail = transport->unavailable();
    f.transport_status = f.transport_detail.empty() ? "ok" : "unavailable";
  }
  if (transport)
    for (auto& p : f.ports) read_ib_port_qos(*transport, p, peer_gid);
  return f;
}

}  // namespace fabkit::probes
