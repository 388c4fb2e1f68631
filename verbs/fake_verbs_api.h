// A VerbsApi for tests, driven by a JSON fixture written in the terms of `ibv_devinfo -v`
// (tests/fixtures/rdma/README.md). Discovery answers from the fixture. The data path simulates
// RC QPs inside one process: two QPs connected to each other (on one device or two) exchange
// SENDs and RDMA WRITEs through real memory, with the checks a kernel and HCA apply (required
// attribute masks per QP transition, path MTU within the port's, keys and bounds, the address
// vector reaching the peer port). Thread-safe, so the two sides of a test can run as threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/json.h"
#include "verbs/verbs_api.h"

namespace fabkit::verbs {

struct FakePort {
  int port = 1;
  PortAttr attr;
  std::vector<GidEntry> gids;  // table slots; all-zero GIDs are unused
};

struct FakeDevice {
  DeviceAttr attr;
  std::vector<FakePort> ports;
};

// Parses the fixture; throws std::invalid_argument naming the device, port and field.
std::vector<FakeDevice> load_fake_devices(const Json& fixture);
// The "(N)" code of an ibv_devinfo value such as "PORT_ACTIVE (4)"; throws on text without one.
int devinfo_code(const std::string& text, const std::string& field);

class FakeVerbsApi final : public VerbsApi {
 public:
  explicit FakeVerbsApi(std::vector<FakeDevice> devices);

  // Makes the next call named `call` ("ibv_reg_mr", "ibv_create_qp", ...) fail with err.
  void fail_next(const std::string& call, int err);
  // After `sends` more successful ibv_post_send calls, the link stops: later work requests are
  // accepted but never delivered or completed (a cable pulled, a netdev down, RoCE dropped).
  void stall_after_sends(int sends);
  // Every ibv_post_send takes `ms` before it returns (a slow link that keeps moving).
  void delay_sends(int ms) { send_delay_ms_ = ms; }
  // Every call made, in order ("ibv_modify_qp RTR mask=0x...", "ibv_destroy_cq rc=16").
  std::vector<std::string> calls() const;
  // Lets a test change a port, e.g. to take LID 0 (no subnet manager).
  FakePort* port(const std::string& dev, int port);
  // The data path as a broken or slow link has it: with stall on, completions are made but never
  // reported (a connected QP whose packets go nowhere, as two rxe ends in two network namespaces
  // of one kernel behave); with a delay, each is reported that long after it was made (a link
  // that moves data, slowly).
  void stall_completions(bool on);
  void set_completion_delay_ms(int ms);

  Expected<std::vector<std::string>> list_devices() override;
  Expected<DeviceAttr> query_device(const std::string& dev) override;
  Expected<PortAttr> query_port(const std::string& dev, int port) override;
  Expected<GidEntry> query_gid(const std::string& dev, int port, int index) override;
  Expected<Handle> open_device(const std::string& dev) override;
  Expected<Handle> alloc_pd(Handle context) override;
  Expected<MemoryRegion> reg_mr(Handle pd, void* addr, size_t length, int access) override;
  Expected<Handle> create_cq(Handle context, int entries) override;
  Expected<Handle> create_rc_qp(Handle pd, Handle cq, int max_send_wr, int max_recv_wr,
                                uint32_t* qpn) override;
  Expected<bool> modify_qp(Handle qp, const QpAttr& attr, int mask) override;
  Expected<bool> post_send(Handle qp, const SendWr& wr) override;
  Expected<bool> post_recv(Handle qp, const RecvWr& wr) override;
  Expected<std::vector<WorkCompletion>> poll_cq(Handle cq, int max, int timeout_ms) override;
  int destroy_qp(Handle qp) override;
  int destroy_cq(Handle cq) override;
  int dereg_mr(Handle mr) override;
  int dealloc_pd(Handle pd) override;
  int close_device(Handle context) override;

 private:
  struct Mr { Handle pd; uint8_t* addr; size_t length; int access; uint32_t lkey, rkey; };
  struct Cq {
    std::deque<std::pair<std::chrono::steady_clock::time_point, WorkCompletion>> done;  // ready at
  };
  struct Qp {
    Handle pd, cq;
    std::string dev;
    uint32_t qpn;
    QpState state = QpState::kReset;
    QpAttr attr;
    std::deque<RecvWr> recvs;
    std::deque<std::vector<uint8_t>> unreceived;  // SENDs waiting for a receive (RNR retry)
  };

  int take_failure(const std::string& call);
  void log(std::string entry);
  int logged(const char* call, int rc);  // teardown calls log "ibv_destroy_qp rc=0"
  const FakePort* find_port(const std::string& dev, int port) const;
  const Mr* find_local(Handle pd, uint64_t addr, uint32_t len, uint32_t lkey) const;
  Qp* peer_of(const Qp& qp);
  void deliver(Qp& to, const uint8_t* data, size_t len);
  void complete(Handle cq, WorkCompletion wc);

  bool stalled_ = false;
  int completion_delay_ms_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<FakeDevice> devices_;
  std::map<std::string, int> failures_;
  int sends_before_stall_ = -1;  // -1: never stalls
  std::atomic<int> send_delay_ms_{0};
  std::vector<std::string> calls_;
  Handle next_handle_ = 1;
  uint32_t next_key_ = 0x1000;
  uint32_t next_qpn_ = 0x100;
  std::map<Handle, std::string> contexts_;
  std::map<Handle, Handle> pds_;  // pd -> context
  std::map<Handle, Mr> mrs_;
  std::map<Handle, Cq> cqs_;
  std::map<Handle, Qp> qps_;
};

}  // namespace fabkit::verbs
