#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/hex.h"
#include "fabric/ofi_rdm/ofi_rdm_test.h"
#include "ofi/libfabric_api.h"

namespace fabkit::fabric::ofi_rdm {
namespace {

using Clock = std::chrono::steady_clock;
using GetinfoFn = int (*)(uint32_t, const char*, const char*, uint64_t, const fi_info*, fi_info**);
using FreeinfoFn = void (*)(fi_info*);
using DupinfoFn = fi_info* (*)(const fi_info*);
using FabricFn = int (*)(fi_fabric_attr*, fid_fabric**, void*);
using StrerrorFn = const char* (*)(int);
using TostrFn = char* (*)(const void*, enum fi_type);

struct Failure : std::runtime_error {
  std::string code;
  Failure(std::string c, const std::string& m) : std::runtime_error(m), code(std::move(c)) {}
};

template <typename T>
void close_fid(T*& p) {
  if (p) fi_close(&p->fid);
  p = nullptr;
}

// One endpoint with its domain, completion queue, address vector and two registered buffers.
class Session {
 public:
  Session(const ofi::LibfabricEntry& lib, const OfiRdmSpec& spec) : spec_(spec) {
    getinfo_ = reinterpret_cast<GetinfoFn>(lib.getinfo);
    freeinfo_ = reinterpret_cast<FreeinfoFn>(lib.freeinfo);
    dupinfo_ = reinterpret_cast<DupinfoFn>(lib.dupinfo);
    fabric_fn_ = reinterpret_cast<FabricFn>(lib.fabric);
    strerror_ = reinterpret_cast<StrerrorFn>(lib.strerror);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // After a failure with transfers still posted, the objects are left to the process's exit:
  // closing an rxm endpoint whose peer went away with operations outstanding crashes inside
  // Debian's libfabric 1.17 (SIGSEGV, seen over the tcp provider in the netns tests). The test
  // runs in a runner child that exits right after it reports.
  void abandon() { abandoned_ = true; }

  ~Session() {
    if (abandoned_) return;
    close_fid(ep_);
    close_fid(av_);
    close_fid(cq_);
    close_fid(send_mr_);
    close_fid(recv_mr_);
    close_fid(domain_);
    close_fid(fabric_);
    if (info_) freeinfo_(info_);
  }

  void open(OfiRdmResult& r) {
    fi_info* hints = dupinfo_(nullptr);
    if (!hints) throw Failure("setup", "fi_allocinfo failed");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    // The modes this test supports: a context per operation, and memory it registers itself.
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->fabric_attr->prov_name = strdup(spec_.provider.c_str());
    const uint32_t version = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    const char* node = spec_.local_node.empty() ? nullptr : spec_.local_node.c_str();
    int rc = getinfo_(version, node, nullptr, node ? FI_SOURCE : 0, hints, &info_);
    freeinfo_(hints);
    if (rc == -FI_ENODATA || (rc == 0 && !info_))
      throw Failure("no_provider", "libfabric offers no '" + spec_.provider + "' RDM endpoint" +
                                       (node ? " on " + spec_.local_node : std::string()) +
                                       " (fi_getinfo: " + strerror_(FI_ENODATA) + ")");
    check(rc, "fi_getinfo");
    r.provider = info_->fabric_attr->prov_name ? info_->fabric_attr->prov_name : "";
    r.fabric = info_->fabric_attr->name ? info_->fabric_attr->name : "";
    r.domain = info_->domain_attr->name ? info_->domain_attr->name : "";
    check(fabric_fn_(info_->fabric_attr, &fabric_, nullptr), "fi_fabric");
    check(fi_domain(fabric_, info_, &domain_, nullptr), "fi_domain");
    fi_cq_attr cq_attr{};
    cq_attr.format = FI_CQ_FORMAT_MSG;
    cq_attr.size = static_cast<size_t>(spec_.window) * 2 + 16;
    cq_attr.wait_obj = FI_WAIT_NONE;  // polled: every wait is a loop with a deadline
    check(fi_cq_open(domain_, &cq_attr, &cq_, nullptr), "fi_cq_open");
    fi_av_attr av_attr{};
    av_attr.type = FI_AV_TABLE;
    av_attr.count = 1;
    check(fi_av_open(domain_, &av_attr, &av_, nullptr), "fi_av_open");
    check(fi_endpoint(domain_, info_, &ep_, nullptr), "fi_endpoint");
    check(fi_ep_bind(ep_, &av_->fid, 0), "fi_ep_bind(av)");
    check(fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
    check(fi_enable(ep_), "fi_enable");
    const size_t size = std::max(spec_.bw_size_bytes, spec_.lat_size_bytes);
    send_buf_.assign(size, 0x5a);
    recv_buf_.assign(size, 0);
    check(fi_mr_reg(domain_, send_buf_.data(), size, FI_SEND, 0, 1, 0, &send_mr_, nullptr),
          "fi_mr_reg(send)");
    check(fi_mr_reg(domain_, recv_buf_.data(), size, FI_RECV, 0, 2, 0, &recv_mr_, nullptr),
          "fi_mr_reg(recv)");
    contexts_.resize(static_cast<size_t>(spec_.window) * 2 + 4);
  }

  std::string name() {
    std::vector<uint8_t> addr(256);
    size_t len = addr.size();
    check(fi_getname(&ep_->fid, addr.data(), &len), "fi_getname");
    addr.resize(len);
    return hex_encode(addr.data(), addr.size());
  }

  void insert_peer(const std::string& hex) {
    std::vector<uint8_t> addr;
    if (!hex_decode(hex, &addr) || addr.empty())
      throw Failure("swap", "the peer's endpoint address is not hex: '" + hex.substr(0, 64) + "'");
    int n = fi_av_insert(av_, addr.data(), 1, &peer_, 0, nullptr);
    if (n != 1)
      throw Failure("setup",
                    "fi_av_insert of the peer's address failed (" + std::to_string(n) + ")");
  }

  void post_recv(size_t len, const std::string& phase) {
    retry(phase, [&](void* ctx) {
      return fi_recv(ep_, recv_buf_.data(), len, fi_mr_desc(recv_mr_), FI_ADDR_UNSPEC, ctx);
    });
  }
  void post_send(size_t len, const std::string& phase) {
    retry(phase, [&](void* ctx) {
      return fi_send(ep_, send_buf_.data(), len, fi_mr_desc(send_mr_), peer_, ctx);
    });
    sent_bytes_ += len;
  }

  // Polls until `sends` sends and `recvs` receives have completed in all, or until no completion
  // came for timeout_ms. The deadline restarts at each completion: a slow link that keeps
  // completing is measured (slow), not failed; a peer that stops is named. The whole step is
  // bounded by the agent's runner child deadline.
  void wait(uint64_t sends, uint64_t recvs, const std::string& phase) {
    const auto quiet = std::chrono::milliseconds(spec_.timeout_ms);
    auto deadline = Clock::now() + quiet;
    while (sends_done_ < sends || recvs_done_ < recvs) {
      if (progress())
        deadline = Clock::now() + quiet;
      else if (Clock::now() >= deadline)
        throw Failure("timeout",
                      "no completion from the peer within " + std::to_string(spec_.timeout_ms) +
                          " ms while " + phase + " (" + std::to_string(recvs_done_) + " of " +
                          std::to_string(recvs) + " receives, " + std::to_string(sends_done_) +
                          " of " + std::to_string(sends) + " sends done)");
    }
  }

  uint64_t sends_done() const { return sends_done_; }
  uint64_t recvs_done() const { return recvs_done_; }
  uint64_t bytes() const { return bytes_ + sent_bytes_; }

 private:
  void check(int rc, const char* call) {
    if (rc != 0)
      throw Failure("setup", std::string(call) + ": " + strerror_(rc < 0 ? -rc : rc) + " (" +
                                 std::to_string(rc) + ")");
  }

  // Reads what completed; true when something did.
  bool progress() {
    fi_cq_msg_entry e[16];
    ssize_t n = fi_cq_read(cq_, e, 16);
    if (n == -FI_EAGAIN) return false;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      fi_cq_readerr(cq_, &err, 0);
      throw Failure("completion_error", std::string("a transfer completed in error: ") +
                                            strerror_(err.err) + " (provider error " +
                                            std::to_string(err.prov_errno) + ")");
    }
    if (n < 0)
      throw Failure("completion_error",
                    std::string("fi_cq_read: ") + strerror_(static_cast<int>(-n)));
    for (ssize_t i = 0; i < n; ++i) {
      if (e[i].flags & FI_RECV) {
        ++recvs_done_;
        bytes_ += e[i].len;
      } else {
        ++sends_done_;
      }
    }
    return n > 0;
  }

  template <typename Post>
  void retry(const std::string& phase, Post post) {
    void* ctx = &contexts_[next_context_++ % contexts_.size()];
    auto deadline = Clock::now() + std::chrono::milliseconds(spec_.timeout_ms);
    for (;;) {
      ssize_t rc = post(ctx);
      if (rc == 0) return;
      if (rc != -FI_EAGAIN)
        throw Failure("send_failed", phase + ": " + strerror_(static_cast<int>(-rc)));
      // The queue is full: completions free it, and the provider progresses while we read.
      if (progress())
        deadline = Clock::now() + std::chrono::milliseconds(spec_.timeout_ms);
      else if (Clock::now() >= deadline)
        throw Failure("timeout", "the send queue stayed full for " +
                                     std::to_string(spec_.timeout_ms) + " ms while " + phase);
    }
  }

  OfiRdmSpec spec_;
  GetinfoFn getinfo_;
  FreeinfoFn freeinfo_;
  DupinfoFn dupinfo_;
  FabricFn fabric_fn_;
  StrerrorFn strerror_;
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_mr* send_mr_ = nullptr;
  fid_mr* recv_mr_ = nullptr;
  fi_addr_t peer_ = FI_ADDR_UNSPEC;
  std::vector<uint8_t> send_buf_, recv_buf_;
  std::vector<fi_context2> contexts_;
  size_t next_context_ = 0;
  bool abandoned_ = false;
  uint64_t sends_done_ = 0, recvs_done_ = 0, bytes_ = 0, sent_bytes_ = 0;
};

// Ping-pong: the client sends, the server answers each message; half the mean round trip after
// the warm-up. Both sides count completions from the start, so the targets grow by one per round.
double latency_us(Session& s, const OfiRdmSpec& spec) {
  const int total = spec.warmup_iters + spec.lat_iters;
  Clock::time_point start;
  for (int i = 0; i < total; ++i) {
    if (i == spec.warmup_iters) start = Clock::now();
    const std::string phase = "waiting for round trip " + std::to_string(i + 1) + " of " +
                              std::to_string(total) + " (" + std::to_string(spec.lat_size_bytes) +
                              " B)";
    const uint64_t base_s = s.sends_done(), base_r = s.recvs_done();
    s.post_recv(spec.lat_size_bytes, phase);
    if (spec.server) {
      s.wait(base_s, base_r + 1, phase);
      s.post_send(spec.lat_size_bytes, phase);
    } else {
      s.post_send(spec.lat_size_bytes, phase);
    }
    s.wait(base_s + 1, base_r + 1, phase);
  }
  double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
  return spec.lat_iters > 0 ? us / spec.lat_iters / 2 : 0;
}

// A window of large sends at a time from the client; the server posts the receives and, after
// the last, answers with one small message that ends the client's clock.
double bandwidth_gbps(Session& s, const OfiRdmSpec& spec) {
  const uint64_t base_s = s.sends_done(), base_r = s.recvs_done();
  const uint64_t total = static_cast<uint64_t>(spec.bw_messages);
  const std::string size = std::to_string(spec.bw_size_bytes) + " B";
  auto start = Clock::now();
  if (spec.server) {
    uint64_t posted = 0;
    while (posted < total) {
      uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(spec.window), total - posted);
      std::string phase = "receiving messages " + std::to_string(posted + 1) + "-" +
                          std::to_string(posted + n) + " of " + std::to_string(total) + " (" +
                          size + ")";
      for (uint64_t i = 0; i < n; ++i) s.post_recv(spec.bw_size_bytes, phase);
      posted += n;
      s.wait(base_s, base_r + posted, phase);
    }
    s.post_send(spec.lat_size_bytes, "sending the bandwidth acknowledgement");
    s.wait(base_s + 1, base_r + total, "sending the bandwidth acknowledgement");
    return 0;  // the client's clock is the measurement
  }
  s.post_recv(spec.lat_size_bytes, "posting the acknowledgement's receive");
  uint64_t sent = 0;
  while (sent < total) {
    uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(spec.window), total - sent);
    std::string phase = "sending messages " + std::to_string(sent + 1) + "-" +
                        std::to_string(sent + n) + " of " + std::to_string(total) + " (" + size +
                        ")";
    for (uint64_t i = 0; i < n; ++i) s.post_send(spec.bw_size_bytes, phase);
    sent += n;
    s.wait(base_s + sent, base_r, phase);
  }
  s.wait(base_s + total, base_r + 1,
         "waiting for the server's acknowledgement of " + std::to_string(total) + " messages");
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return seconds > 0 ? static_cast<double>(total * spec.bw_size_bytes) * 8 / seconds / 1e9 : 0;
}

}  // namespace

OfiRdmResult run_ofi_rdm(const OfiRdmSpec& spec, const Environment& env, const AddressSwap& swap) {
  OfiRdmResult r;
  ofi::LibfabricEntry lib = ofi::load_libfabric(env);
  if (!lib.handle) {
    r.status = "unavailable";
    r.code = "unavailable";
    r.reason = lib.error;
    return r;
  }
  auto tostr = reinterpret_cast<TostrFn>(lib.tostr);
  const char* release = tostr("", FI_TYPE_VERSION);
  r.library = lib.path + " (" + (release ? release : "?") + ")";
  try {
    Session s(lib, spec);
    s.open(r);
    std::string peer;
    try {
      peer = swap(s.name());
    } catch (const std::exception& e) {
      throw Failure("swap", std::string("endpoint address swap: ") + e.what());
    }
    s.insert_peer(peer);
    try {
      r.latency_us = latency_us(s, spec);
      r.bandwidth_gbps = bandwidth_gbps(s, spec);
    } catch (const Failure&) {
      s.abandon();
      throw;
    }
    r.bytes_moved = s.bytes();
    r.status = "ok";
  } catch (const Failure& f) {
    r.status = f.code == "no_provider" ? "unavailable" : "failed";
    r.code = f.code;
    r.reason = f.what();
  }
  return r;
}

}  // namespace fabkit::fabric::ofi_rdm
