#include "verbs/fake_verbs_api.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fabkit::verbs {
namespace {

const char* state_name(QpState s) {
  switch (s) {
    case QpState::kReset: return "RESET";
    case QpState::kInit: return "INIT";
    case QpState::kRtr: return "RTR";
    case QpState::kRts: return "RTS";
    default: return "OTHER";
  }
}

// Required and optional attribute masks for RC transitions: the kernel's qp_state_table
// (drivers/infiniband/core/verbs.c, from IBTA vol. 1 table 91) rejects anything else with EINVAL.
struct Transition { QpState from, to; int required, optional; };
constexpr Transition kRcTransitions[] = {
    {QpState::kReset, QpState::kInit, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags, 0},
    {QpState::kInit, QpState::kRtr,
     kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic | kQpMinRnrTimer,
     kQpAccessFlags | kQpPkeyIndex},
    {QpState::kRtr, QpState::kRts,
     kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic,
     kQpAccessFlags | kQpMinRnrTimer},
};

}  // namespace

FakeVerbsApi::FakeVerbsApi(std::vector<FakeDevice> devices) : devices_(std::move(devices)) {}

void FakeVerbsApi::fail_next(const std::string& call, int err) {
  std::lock_guard<std::mutex> l(mu_);
  failures_[call] = err;
}

std::vector<std::string> FakeVerbsApi::calls() const {
  std::lock_guard<std::mutex> l(mu_);
  return calls_;
}

FakePort* FakeVerbsApi::port(const std::string& dev, int port) {
  std::lock_guard<std::mutex> l(mu_);
  return const_cast<FakePort*>(find_port(dev, port));
}

int FakeVerbsApi::take_failure(const std::string& call) {
  auto it = failures_.find(call);
  if (it == failures_.end()) return 0;
  int err = it->second;
  failures_.erase(it);
  return err;
}

void FakeVerbsApi::log(std::string entry) { calls_.push_back(std::move(entry)); }

int FakeVerbsApi::logged(const char* call, int rc) {
  log(std::string(call) + " rc=" + std::to_string(rc));
  return rc;
}

const FakePort* FakeVerbsApi::find_port(const std::string& dev, int port) const {
  for (const auto& d : devices_)
    if (d.attr.name == dev)
      for (const auto& p : d.ports)
        if (p.port == port) return &p;
  return nullptr;
}

Expected<std::vector<std::string>> FakeVerbsApi::list_devices() {
  std::lock_guard<std::mutex> l(mu_);
  log("ibv_get_device_list");
  if (int err = take_failure("ibv_get_device_list")) return SysError{"ibv_get_device_list", err, "fake"};
  std::vector<std::string> names;
  for (const auto& d : devices_) names.push_back(d.attr.name);
  return names;
}

Expected<DeviceAttr> FakeVerbsApi::query_device(const std::string& dev) {
  std::lock_guard<std::mutex> l(mu_);
  if (int err = take_failure("ibv_query_device")) return SysError{"ibv_query_device", err, dev};
  for (const auto& d : devices_)
    if (d.attr.name == dev) return d.attr;
  return SysError{"ibv_open_device", ENODEV, dev};
}

Expected<PortAttr> FakeVerbsApi::query_port(const std::string& dev, int port) {
  std::lock_guard<std::mutex> l(mu_);
  std::string object = dev + ":" + std::to_string(port);
  if (int err = take_failure("ibv_query_port")) return SysError{"ibv_query_port", err, object};
  const FakePort* p = find_port(dev, port);
  if (!p) return SysError{"ibv_query_port", EINVAL, object};
  return p->attr;
}

Expected<GidEntry> FakeVerbsApi::query_gid(const std::string& dev, int port, int index) {
  std::lock_guard<std::mutex> l(mu_);
  std::string object = dev + ":" + std::to_string(port) + " GID " + std::to_string(index);
  const FakePort* p = find_port(dev, port);
  if (!p || index < 0 || index >= p->attr.gid_tbl_len) return SysError{"ibv_query_gid_ex", EINVAL, object};
  for (const auto& g : p->gids)
    if (g.index == index) return g;
  return SysError{"ibv_query_gid_ex", ENODATA, object};
}

Expected<Handle> FakeVerbsApi::open_device(const std::string& dev) {
  std::lock_guard<std::mutex> l(mu_);
  log("ibv_open_device " + dev);
  if (int err = take_failure("ibv_open_device")) return SysError{"ibv_open_device", err, dev};
  for (const auto& d : devices_)
    if (d.attr.name == dev) {
      contexts_[next_handle_] = dev;
      return next_handle_++;
    }
  return SysError{"ibv_open_device", ENODEV, dev};
}

Expected<Handle> FakeVerbsApi::alloc_pd(Handle context) {
  std::lock_guard<std::mutex> l(mu_);
  log("ibv_alloc_pd");
  if (int err = take_failure("ibv_alloc_pd")) return SysError{"ibv_alloc_pd", err, "pd"};
  if (!contexts_.count(context)) return SysError{"ibv_alloc_pd", EINVAL, "context"};
  pds_[next_handle_] = context;
  return next_handle_++;
}

Expected<MemoryRegion> FakeVerbsApi::reg_mr(Handle pd, void* addr, size_t length, int access) {
  std::lock_guard<std::mutex> l(mu_);
  log("ibv_reg_mr " + std::to_string(length));
  std::string object = std::to_string(length) + " bytes";
  if (int err = take_failure("ibv_reg_mr")) return SysError{"ibv_reg_mr", err, object};
  if (!pds_.count(pd) || !addr || !length) return SysError{"ibv_reg_mr", EINVAL, object};
  Mr mr{pd, static_cast<uint8_t*>(addr), length, access, next_key_, next_key_ + 1};
  next_key_ += 2;
  mrs_[next_handle_] = mr;
  return MemoryRegion{next_handle_++, mr.lkey, mr.rkey};
}

Expected<Handle> FakeVerbsApi::create_cq(Handle context, int entries) {
  std::lock_guard<std::mutex> l(mu_);
  log("ibv_create_cq");
  if (int err = take_failure("ibv_create_cq")) return SysError{"ibv_create_cq", err, "cq"};
  if (!contexts_.count(context) || entries <= 0) return SysError{"ibv_create_cq", EINVAL, "cq"};
  cqs_[next_handle_] = Cq{};
  return next_handle_++;
}

Expected<Handle> FakeVerbsApi::create_rc_qp(Handle pd, Handle cq, int max_send_wr, int max_recv_wr,
                                            uint32_t* qpn) {
  std::lock_guard<std::mutex> l(mu_);
  log("ibv_create_qp RC");
  if (int err = take_failure("ibv_create_qp")) return SysError{"ibv_create_qp", err, "RC QP"};
  if (!pds_.count(pd) || !cqs_.count(cq) || max_send_wr <= 0 || max_recv_wr <= 0)
    return SysError{"ibv_create_qp", EINVAL, "RC QP"};
  Qp qp;
  qp.pd = pd;
  qp.cq = cq;
  qp.dev = contexts_[pds_[pd]];
  qp.qpn = next_qpn_++;
  *qpn = qp.qpn;
  qps_[next_handle_] = std::move(qp);
  return next_handle_++;
}

Expected<bool> FakeVerbsApi::modify_qp(Handle h, const QpAttr& a, int mask) {
  std::lock_guard<std::mutex> l(mu_);
  char mask_hex[16];
  snprintf(mask_hex, sizeof mask_hex, "0x%x", mask);
  log(std::string("ibv_modify_qp ") + state_name(a.qp_state) + " mask=" + mask_hex);
  if (a.qp_state == QpState::kRtr)  // the address vector, so tests see what a real HCA would get
    log("ibv_modify_qp RTR av sl=" + std::to_string(a.sl) +
        (a.is_global ? " grh hop_limit=" + std::to_string(a.hop_limit) + " traffic_class=" +
                           std::to_string(a.traffic_class) + " sgid_index=" + std::to_string(a.sgid_index)
                     : std::string(" no grh")));
  std::string object = std::string("QP to ") + state_name(a.qp_state);
  if (int err = take_failure("ibv_modify_qp")) return SysError{"ibv_modify_qp", err, object};
  auto it = qps_.find(h);
  if (it == qps_.end()) return SysError{"ibv_modify_qp", EINVAL, object};
  Qp& qp = it->second;
  const Transition* t = nullptr;
  for (const auto& c : kRcTransitions)
    if (c.from == qp.state && c.to == a.qp_state) t = &c;
  if (!t || (mask & t->required) != t->required || (mask & ~(t->required | t->optional)))
    return SysError{"ibv_modify_qp", EINVAL, object + " (mask " + mask_hex + ")"};
  int port_num = a.qp_state == QpState::kInit ? a.port_num : qp.attr.port_num;
  const FakePort* port = find_port(qp.dev, port_num);
  if (!port) return SysError{"ibv_modify_qp", EINVAL, object + " (port)"};
  if (a.qp_state == QpState::kRtr) {
    // The HCA refuses a path MTU above the port's active MTU, and a RoCE address vector without
    // a GRH whose source GID exists.
    if (static_cast<int>(a.path_mtu) > static_cast<int>(port->attr.active_mtu))
      return SysError{"ibv_modify_qp", EINVAL, object + " (path_mtu above active_mtu)"};
    bool sgid_ok = false;
    for (const auto& g : port->gids) sgid_ok |= g.index == a.sgid_index && !is_zero(g.gid);
    if (port->attr.link_layer == LinkLayer::kEthernet && (!a.is_global || !sgid_ok))
      return SysError{"ibv_modify_qp", EINVAL, object + " (RoCE needs a GRH with a valid sgid)"};
  }
  QpAttr merged = qp.attr;
  if (a.qp_state == QpState::kInit) {
    merged.port_num = a.port_num;
    merged.qp_access_flags = a.qp_access_flags;
  } else if (a.qp_state == QpState::kRtr) {
    merged.path_mtu = a.path_mtu;
    merged.dest_qp_num = a.dest_qp_num;
    merged.rq_psn = a.rq_psn;
    merged.dlid = a.dlid;
    merged.is_global = a.is_global;
    merged.dgid = a.dgid;
    merged.sgid_index = a.sgid_index;
  } else {
    merged.sq_psn = a.sq_psn;
  }
  merged.qp_state = a.qp_state;
  qp.attr = merged;
  qp.state = a.qp_state;
  return true;
}

}  // namespace fabkit::verbs
