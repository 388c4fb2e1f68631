// The fake's wire: delivery between two connected QPs in one process.
#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "verbs/fake_verbs_api.h"

namespace fabkit::verbs {
namespace {
constexpr int kWcSuccess = 0, kWcLocLenErr = 1, kWcLocProtErr = 4, kWcRemAccessErr = 10,
              kWcRetryExcErr = 12;
}  // namespace

const FakeVerbsApi::Mr* FakeVerbsApi::find_local(Handle pd, uint64_t addr, uint32_t len,
                                                 uint32_t lkey) const {
  for (const auto& [h, mr] : mrs_) {
    auto base = reinterpret_cast<uint64_t>(mr.addr);
    if (mr.pd == pd && mr.lkey == lkey && addr >= base && addr + len <= base + mr.length) return &mr;
  }
  return nullptr;
}

// The QP our address vector reaches, as a fabric would route it: on InfiniBand by destination
// LID, on RoCE by destination GID (with the same GID type: a RoCE v1 frame is not a v2 packet).
// nullptr means the packets go nowhere and the requester retries until RETRY_EXC_ERR.
FakeVerbsApi::Qp* FakeVerbsApi::peer_of(const Qp& qp) {
  const FakePort* mine = find_port(qp.dev, qp.attr.port_num);
  for (auto& [h, peer] : qps_) {
    if (peer.qpn != qp.attr.dest_qp_num || peer.attr.dest_qp_num != qp.qpn) continue;
    if (peer.state != QpState::kRtr && peer.state != QpState::kRts) continue;
    if (peer.attr.path_mtu != qp.attr.path_mtu) continue;  // oversize packets are dropped
    const FakePort* theirs = find_port(peer.dev, peer.attr.port_num);
    if (!mine || !theirs || mine->attr.link_layer != theirs->attr.link_layer) continue;
    if (mine->attr.link_layer == LinkLayer::kInfiniBand && !qp.attr.is_global) {
      if (qp.attr.dlid == 0 || qp.attr.dlid != theirs->attr.lid) continue;
      return &peer;
    }
    const GidEntry* src = nullptr;
    for (const auto& g : mine->gids)
      if (g.index == qp.attr.sgid_index) src = &g;
    for (const auto& g : theirs->gids)
      if (src && g.gid == qp.attr.dgid && g.type == src->type && !is_zero(g.gid)) return &peer;
  }
  return nullptr;
}

void FakeVerbsApi::stall_completions(bool on) {
  std::lock_guard<std::mutex> l(mu_);
  stalled_ = on;
  cv_.notify_all();
}

void FakeVerbsApi::set_completion_delay_ms(int ms) {
  std::lock_guard<std::mutex> l(mu_);
  completion_delay_ms_ = ms;
}

void FakeVerbsApi::complete(Handle cq, WorkCompletion wc) {
  cqs_[cq].done.emplace_back(
      std::chrono::steady_clock::now() + std::chrono::milliseconds(completion_delay_ms_), wc);
  cv_.notify_all();
}

void FakeVerbsApi::deliver(Qp& to, const uint8_t* data, size_t len) {
  if (to.recvs.empty()) {
    // Receiver not ready: RC retries (rnr_retry 7 = forever) until a receive is posted.
    to.unreceived.emplace_back(data, data + len);
    return;
  }
  RecvWr r = to.recvs.front();
  to.recvs.pop_front();
  const Mr* mr = find_local(to.pd, r.local_addr, r.length, r.lkey);
  if (!mr || len > r.length) {
    complete(to.cq, {r.wr_id, mr ? kWcLocLenErr : kWcLocProtErr, true, 0});
    return;
  }
  if (len) std::memcpy(reinterpret_cast<void*>(r.local_addr), data, len);
  complete(to.cq, {r.wr_id, kWcSuccess, true, static_cast<uint32_t>(len)});
}

void FakeVerbsApi::stall_after_sends(int sends) {
  std::lock_guard<std::mutex> l(mu_);
  sends_before_stall_ = sends;
}

Expected<bool> FakeVerbsApi::post_send(Handle h, const SendWr& w) {
  if (int ms = send_delay_ms_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  std::lock_guard<std::mutex> l(mu_);
  if (int err = take_failure("ibv_post_send")) return SysError{"ibv_post_send", err, "QP"};
  auto it = qps_.find(h);
  if (it == qps_.end() || it->second.state != QpState::kRts) return SysError{"ibv_post_send", EINVAL, "QP not in RTS"};
  Qp& qp = it->second;
  const Mr* local = find_local(qp.pd, w.local_addr, w.length, w.lkey);
  if (!local) {
    complete(qp.cq, {w.wr_id, kWcLocProtErr, false, 0});
    return true;
  }
  if (sends_before_stall_ == 0) return true;  // accepted, and lost on a link that stopped
  if (sends_before_stall_ > 0) --sends_before_stall_;
  Qp* peer = peer_of(qp);
  if (!peer) {
    complete(qp.cq, {w.wr_id, kWcRetryExcErr, false, 0});
    return true;
  }
  const auto* src = reinterpret_cast<const uint8_t*>(w.local_addr);
  if (w.opcode == WrOpcode::kRdmaWrite) {
    const Mr* target = nullptr;
    for (const auto& [mh, mr] : mrs_) {
      auto base = reinterpret_cast<uint64_t>(mr.addr);
      if (mr.pd == peer->pd && mr.rkey == w.rkey && (mr.access & kAccessRemoteWrite) &&
          w.remote_addr >= base && w.remote_addr + w.length <= base + mr.length)
        target = &mr;
    }
    if (!target) {
      complete(qp.cq, {w.wr_id, kWcRemAccessErr, false, 0});
      return true;
    }
    std::memcpy(reinterpret_cast<void*>(w.remote_addr), src, w.length);
  } else {
    deliver(*peer, src, w.length);
  }
  if (w.signaled) complete(qp.cq, {w.wr_id, kWcSuccess, false, w.length});
  return true;
}

Expected<bool> FakeVerbsApi::post_recv(Handle h, const RecvWr& w) {
  std::lock_guard<std::mutex> l(mu_);
  if (int err = take_failure("ibv_post_recv")) return SysError{"ibv_post_recv", err, "QP"};
  auto it = qps_.find(h);
  if (it == qps_.end() || it->second.state == QpState::kReset)
    return SysError{"ibv_post_recv", EINVAL, "QP in RESET"};
  Qp& qp = it->second;
  qp.recvs.push_back(w);
  if (!qp.unreceived.empty()) {
    std::vector<uint8_t> data = std::move(qp.unreceived.front());
    qp.unreceived.pop_front();
    deliver(qp, data.data(), data.size());
  }
  return true;
}

Expected<std::vector<WorkCompletion>> FakeVerbsApi::poll_cq(Handle cq, int max, int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> l(mu_);
  auto it = cqs_.find(cq);
  if (it == cqs_.end()) return SysError{"ibv_poll_cq", EINVAL, "CQ"};
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto ready = [&] {
    const auto& done = cqs_[cq].done;
    return !stalled_ && !done.empty() && done.front().first <= Clock::now();
  };
  while (!ready() && Clock::now() < deadline) {
    // A delayed completion becomes ready with no notify: wake for it, or for the deadline.
    auto until = deadline;
    const auto& done = cqs_[cq].done;
    if (!stalled_ && !done.empty()) until = std::min(until, done.front().first);
    cv_.wait_until(l, until);
  }
  std::vector<WorkCompletion> out;
  auto& done = cqs_[cq].done;
  while (ready() && static_cast<int>(out.size()) < max) {
    out.push_back(done.front().second);
    done.pop_front();
  }
  return out;
}

int FakeVerbsApi::destroy_qp(Handle h) {
  std::lock_guard<std::mutex> l(mu_);
  return logged("ibv_destroy_qp", qps_.erase(h) ? 0 : EINVAL);
}

int FakeVerbsApi::destroy_cq(Handle h) {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [qh, qp] : qps_)
    if (qp.cq == h) return logged("ibv_destroy_cq", EBUSY);  // a QP still uses it: wrong order
  return logged("ibv_destroy_cq", cqs_.erase(h) ? 0 : EINVAL);
}

int FakeVerbsApi::dereg_mr(Handle h) {
  std::lock_guard<std::mutex> l(mu_);
  return logged("ibv_dereg_mr", mrs_.erase(h) ? 0 : EINVAL);
}

int FakeVerbsApi::dealloc_pd(Handle h) {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [mh, mr] : mrs_)
    if (mr.pd == h) return logged("ibv_dealloc_pd", EBUSY);
  for (const auto& [qh, qp] : qps_)
    if (qp.pd == h) return logged("ibv_dealloc_pd", EBUSY);
  return logged("ibv_dealloc_pd", pds_.erase(h) ? 0 : EINVAL);
}

int FakeVerbsApi::close_device(Handle h) {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [ph, ctx] : pds_)
    if (ctx == h) return logged("ibv_close_device", EBUSY);
  return logged("ibv_close_device", contexts_.erase(h) ? 0 : EINVAL);
}

}  // namespace fabkit::verbs
