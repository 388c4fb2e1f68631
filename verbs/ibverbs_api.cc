#include "verbs/ibverbs_api.h"

#include <infiniband/verbs.h>
#include <net/if.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

namespace fabkit::verbs {
namespace {

// Our mask/access/opcode values are libibverbs' own (verbs_api.h); keep them honest.
constexpr bool same(int ours, int theirs) { return ours == theirs; }
static_assert(same(kQpState, IBV_QP_STATE) &&
              same(kQpAccessFlags, IBV_QP_ACCESS_FLAGS) &&
              same(kQpPkeyIndex, IBV_QP_PKEY_INDEX) &&
              same(kQpPort, IBV_QP_PORT) &&
              same(kQpAv, IBV_QP_AV) &&
              same(kQpPathMtu, IBV_QP_PATH_MTU) &&
              same(kQpTimeout, IBV_QP_TIMEOUT) &&
              same(kQpRetryCnt, IBV_QP_RETRY_CNT) &&
              same(kQpRnrRetry, IBV_QP_RNR_RETRY) &&
              same(kQpRqPsn, IBV_QP_RQ_PSN) &&
              same(kQpMaxQpRdAtomic, IBV_QP_MAX_QP_RD_ATOMIC) &&
              same(kQpMinRnrTimer, IBV_QP_MIN_RNR_TIMER) &&
              same(kQpSqPsn, IBV_QP_SQ_PSN) &&
              same(kQpMaxDestRdAtomic, IBV_QP_MAX_DEST_RD_ATOMIC) &&
              same(kQpDestQpn, IBV_QP_DEST_QPN) &&
              same(kAccessLocalWrite, IBV_ACCESS_LOCAL_WRITE) &&
              same(kAccessRemoteWrite, IBV_ACCESS_REMOTE_WRITE) &&
              same(kAccessRemoteRead, IBV_ACCESS_REMOTE_READ) &&
              same(static_cast<int>(WrOpcode::kRdmaWrite), IBV_WR_RDMA_WRITE) &&
              same(static_cast<int>(WrOpcode::kSend), IBV_WR_SEND));

template <typename T>
T* as(Handle h) { return reinterpret_cast<T*>(static_cast<uintptr_t>(h)); }
template <typename T>
Handle handle_of(T* p) { return static_cast<Handle>(reinterpret_cast<uintptr_t>(p)); }

class IbverbsApi final : public VerbsApi {
 public:
  ~IbverbsApi() override {
    for (auto& [name, ctx] : query_contexts_) ibv_close_device(ctx);
    if (list_) ibv_free_device_list(list_);
  }

  Expected<std::vector<std::string>> list_devices() override {
    if (list_) ibv_free_device_list(list_);
    for (auto& [name, ctx] : query_contexts_) ibv_close_device(ctx);
    query_contexts_.clear();
    int n = 0;
    errno = 0;
    list_ = ibv_get_device_list(&n);
    if (!list_) {
      // ENOSYS: the kernel has no RDMA support (no /sys/class/infiniband_verbs) - a node without
      // devices, not a failure of the tool.
      if (errno == ENOSYS || errno == 0) return std::vector<std::string>{};
      return SysError{"ibv_get_device_list", errno, "libibverbs"};
    }
    std::vector<std::string> names;
    for (int i = 0; i < n; ++i) names.push_back(ibv_get_device_name(list_[i]));
    return names;
  }

  Expected<DeviceAttr> query_device(const std::string& dev) override {
    auto ctx = query_context(dev);
    if (!ok(ctx)) return error(ctx);
    ibv_device_attr a{};
    if (int rc = ibv_query_device(value(ctx), &a)) return SysError{"ibv_query_device", rc, dev};
    DeviceAttr d;
    d.name = dev;
    d.fw_ver = a.fw_ver;
    d.node_guid = format_guid(a.node_guid);
    d.phys_port_cnt = a.phys_port_cnt;
    return d;
  }

  Expected<PortAttr> query_port(const std::string& dev, int port) override {
    auto ctx = query_context(dev);
    if (!ok(ctx)) return error(ctx);
    ibv_port_attr a{};
    if (int rc = ibv_query_port(value(ctx), static_cast<uint8_t>(port), &a))
      return SysError{"ibv_query_port", rc, dev + ":" + std::to_string(port)};
    PortAttr p;
    p.state = static_cast<PortState>(a.state);
    p.phys_state = static_cast<PhysState>(a.phys_state);
    p.link_layer = static_cast<LinkLayer>(a.link_layer);
    p.active_speed = static_cast<Speed>(a.active_speed);
    p.active_width = static_cast<Width>(a.active_width);
    p.active_mtu = static_cast<Mtu>(a.active_mtu);
    p.max_mtu = static_cast<Mtu>(a.max_mtu);
    p.lid = a.lid;
    p.sm_lid = a.sm_lid;
    p.gid_tbl_len = a.gid_tbl_len;
    return p;
  }

  Expected<GidEntry> query_gid(const std::string& dev, int port, int index) override {
    auto ctx = query_context(dev);
    if (!ok(ctx)) return error(ctx);
    ibv_gid_entry e{};
    std::string object = dev + ":" + std::to_string(port) + " GID " + std::to_string(index);
    if (int rc = ibv_query_gid_ex(value(ctx), static_cast<uint32_t>(port),
                                  static_cast<uint32_t>(index), &e, 0))
      return SysError{"ibv_query_gid_ex", rc, object};
    GidEntry g;
    g.index = index;
    std::memcpy(g.gid.data(), e.gid.raw, 16);
    g.type = static_cast<GidType>(e.gid_type);
    // The kernel gives the ifindex whichever namespace the netdev is in (shared-netns RDMA: a
    // container sees every device); the name is looked up in ours, where it may be absent.
    g.netdev_ifindex = e.ndev_ifindex;
    char name[IF_NAMESIZE] = {};
    if (e.ndev_ifindex && if_indextoname(e.ndev_ifindex, name)) g.netdev = name;
    return g;
  }

  Expected<Handle> open_device(const std::string& dev) override {
    ibv_device* d = find(dev);
    if (!d) return SysError{"ibv_open_device", ENODEV, dev};
    ibv_context* ctx = ibv_open_device(d);
    if (!ctx) return SysError{"ibv_open_device", errno, dev};
    return handle_of(ctx);
  }

  Expected<Handle> alloc_pd(Handle context) override {
    ibv_pd* pd = ibv_alloc_pd(as<ibv_context>(context));
    if (!pd) return SysError{"ibv_alloc_pd", errno, "protection domain"};
    return handle_of(pd);
  }

  Expected<MemoryRegion> reg_mr(Handle pd, void* addr, size_t length, int access) override {
    ibv_mr* mr = ibv_reg_mr(as<ibv_pd>(pd), addr, length, access);
    if (!mr) return SysError{"ibv_reg_mr", errno, std::to_string(length) + " bytes"};
    return MemoryRegion{handle_of(mr), mr->lkey, mr->rkey};
  }

  Expected<Handle> create_cq(Handle context, int entries) override {
    ibv_cq* cq = ibv_create_cq(as<ibv_context>(context), entries, nullptr, nullptr, 0);
    if (!cq) return SysError{"ibv_create_cq", errno, std::to_string(entries) + " entries"};
    return handle_of(cq);
  }

  Expected<Handle> create_rc_qp(Handle pd, Handle cq, int max_send_wr, int max_recv_wr,
                                uint32_t* qpn) override {
    ibv_qp_init_attr init{};
    init.send_cq = as<ibv_cq>(cq);
    init.recv_cq = as<ibv_cq>(cq);
    init.cap.max_send_wr = static_cast<uint32_t>(max_send_wr);
    init.cap.max_recv_wr = static_cast<uint32_t>(max_recv_wr);
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.qp_type = IBV_QPT_RC;
    ibv_qp* qp = ibv_create_qp(as<ibv_pd>(pd), &init);
    if (!qp) return SysError{"ibv_create_qp", errno, "RC QP"};
    *qpn = qp->qp_num;
    return handle_of(qp);
  }

  Expected<bool> modify_qp(Handle qp, const QpAttr& in, int mask) override {
    ibv_qp_attr a{};
    a.qp_state = static_cast<ibv_qp_state>(in.qp_state);
    a.qp_access_flags = static_cast<unsigned>(in.qp_access_flags);
    a.pkey_index = static_cast<uint16_t>(in.pkey_index);
    a.port_num = static_cast<uint8_t>(in.port_num);
    a.path_mtu = static_cast<ibv_mtu>(in.path_mtu);
    a.dest_qp_num = in.dest_qp_num;
    a.rq_psn = in.rq_psn;
    a.sq_psn = in.sq_psn;
    a.max_rd_atomic = static_cast<uint8_t>(in.max_rd_atomic);
    a.max_dest_rd_atomic = static_cast<uint8_t>(in.max_dest_rd_atomic);
    a.min_rnr_timer = static_cast<uint8_t>(in.min_rnr_timer);
    a.timeout = static_cast<uint8_t>(in.timeout);
    a.retry_cnt = static_cast<uint8_t>(in.retry_cnt);
    a.rnr_retry = static_cast<uint8_t>(in.rnr_retry);
    a.ah_attr.dlid = in.dlid;
    a.ah_attr.sl = static_cast<uint8_t>(in.sl);
    a.ah_attr.port_num = static_cast<uint8_t>(in.port_num);
    a.ah_attr.is_global = in.is_global ? 1 : 0;
    std::memcpy(a.ah_attr.grh.dgid.raw, in.dgid.data(), 16);
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(in.sgid_index);
    a.ah_attr.grh.hop_limit = static_cast<uint8_t>(in.hop_limit);
    a.ah_attr.grh.traffic_class = static_cast<uint8_t>(in.traffic_class);
    if (int rc = ibv_modify_qp(as<ibv_qp>(qp), &a, mask))
      return SysError{"ibv_modify_qp", rc, "QP to state " + std::to_string(int(in.qp_state))};
    return true;
  }

  Expected<bool> post_send(Handle qp, const SendWr& w) override {
    ibv_sge sge{w.local_addr, w.length, w.lkey};
    ibv_send_wr wr{};
    wr.wr_id = w.wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = static_cast<ibv_wr_opcode>(w.opcode);
    wr.send_flags = w.signaled ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = w.remote_addr;
    wr.wr.rdma.rkey = w.rkey;
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(as<ibv_qp>(qp), &wr, &bad)) return SysError{"ibv_post_send", rc, "QP"};
    return true;
  }

  Expected<bool> post_recv(Handle qp, const RecvWr& w) override {
    ibv_sge sge{w.local_addr, w.length, w.lkey};
    ibv_recv_wr wr{};
    wr.wr_id = w.wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (int rc = ibv_post_recv(as<ibv_qp>(qp), &wr, &bad)) return SysError{"ibv_post_recv", rc, "QP"};
    return true;
  }

  Expected<std::vector<WorkCompletion>> poll_cq(Handle cq, int max, int timeout_ms) override {
    // Busy polling, as perftest does: an event channel would add microseconds to each latency.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    std::vector<ibv_wc> wc(static_cast<size_t>(max > 0 ? max : 1));
    for (;;) {
      int n = ibv_poll_cq(as<ibv_cq>(cq), static_cast<int>(wc.size()), wc.data());
      if (n < 0) return SysError{"ibv_poll_cq", EIO, "CQ"};
      if (n > 0) {
        std::vector<WorkCompletion> out;
        for (int i = 0; i < n; ++i) out.push_back(completion_from(wc[i]));
        return out;
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::vector<WorkCompletion>{};
    }
  }

  int destroy_qp(Handle qp) override { return ibv_destroy_qp(as<ibv_qp>(qp)); }
  int destroy_cq(Handle cq) override { return ibv_destroy_cq(as<ibv_cq>(cq)); }
  int dereg_mr(Handle mr) override { return ibv_dereg_mr(as<ibv_mr>(mr)); }
  int dealloc_pd(Handle pd) override { return ibv_dealloc_pd(as<ibv_pd>(pd)); }
  int close_device(Handle c) override { return ibv_close_device(as<ibv_context>(c)); }

 private:
  ibv_device* find(const std::string& dev) {
    if (!list_) list_devices();
    for (int i = 0; list_ && list_[i]; ++i)
      if (dev == ibv_get_device_name(list_[i])) return list_[i];
    return nullptr;
  }

  Expected<ibv_context*> query_context(const std::string& dev) {
    auto it = query_contexts_.find(dev);
    if (it != query_contexts_.end()) return it->second;
    ibv_device* d = find(dev);
    if (!d) return SysError{"ibv_open_device", ENODEV, dev};
    ibv_context* ctx = ibv_open_device(d);
    if (!ctx) return SysError{"ibv_open_device", errno, dev};
    query_contexts_[dev] = ctx;
    return ctx;
  }

  ibv_device** list_ = nullptr;
  std::map<std::string, ibv_context*> query_contexts_;
};

}  // namespace

std::unique_ptr<VerbsApi> make_ibverbs_api() { return std::make_unique<IbverbsApi>(); }

WorkCompletion completion_from(const ibv_wc& wc) {
  const bool ok = wc.status == IBV_WC_SUCCESS;
  return {wc.wr_id, static_cast<int>(wc.status), ok && (wc.opcode & IBV_WC_RECV) != 0, ok ? wc.byte_len : 0};
}

}  // namespace fabkit::verbs
