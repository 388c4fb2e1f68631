// The verbs seam: the few libibverbs operations fabkit needs, behind an interface so the same
// probe and RC test run against real hardware (ibverbs_api.h), and against fixtures in tests
// (fake_verbs_api.h). Calls return a value or a SysError naming the verbs call, errno and object;
// they never throw for a device that misbehaves.
//
// Objects are opaque handles owned by the implementation; verbs_objects.h wraps them in RAII
// types. The data-path calls follow rdma-core's rc_pingpong: open -> PD -> MR -> CQ -> QP,
// modify QP RESET->INIT->RTR->RTS, post, poll.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/file_reader.h"
#include "verbs/verbs_types.h"

namespace fabkit::verbs {

using Handle = uint64_t;  // 0 is never a valid object

// Access flags and QP attribute-mask bits carry libibverbs' values (IBV_ACCESS_*, IBV_QP_*), so
// the real implementation passes them through and tests can check the exact masks.
enum Access : int {
  kAccessLocalWrite = 1, kAccessRemoteWrite = 2, kAccessRemoteRead = 4,
};
enum QpAttrMask : int {
  kQpState = 1 << 0, kQpAccessFlags = 1 << 3, kQpPkeyIndex = 1 << 4, kQpPort = 1 << 5,
  kQpAv = 1 << 7, kQpPathMtu = 1 << 8, kQpTimeout = 1 << 9, kQpRetryCnt = 1 << 10,
  kQpRnrRetry = 1 << 11, kQpRqPsn = 1 << 12, kQpMaxQpRdAtomic = 1 << 13, kQpMinRnrTimer = 1 << 15,
  kQpSqPsn = 1 << 16, kQpMaxDestRdAtomic = 1 << 17, kQpDestQpn = 1 << 20,
};
enum class QpState : int { kReset = 0, kInit = 1, kRtr = 2, kRts = 3, kSqd = 4, kSqe = 5, kErr = 6 };

// The subset of struct ibv_qp_attr an RC connection sets.
struct QpAttr {
  QpState qp_state = QpState::kReset;
  int qp_access_flags = 0;
  int pkey_index = 0;
  int port_num = 1;
  Mtu path_mtu = Mtu::k1024;
  uint32_t dest_qp_num = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  int max_rd_atomic = 0;
  int max_dest_rd_atomic = 0;
  int min_rnr_timer = 0;
  int timeout = 0;
  int retry_cnt = 0;
  int rnr_retry = 0;
  // Address vector: dlid for InfiniBand; with is_global a GRH to dgid (RoCE always).
  uint16_t dlid = 0;
  bool is_global = false;
  Gid dgid{};
  int sgid_index = 0;
  int hop_limit = 1;
  int traffic_class = 0;
  int sl = 0;
};

struct MemoryRegion {
  Handle handle = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

enum class WrOpcode : int { kRdmaWrite = 0, kSend = 2 };  // IBV_WR_* values

struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::kSend;
  uint64_t local_addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
  bool signaled = true;
  uint64_t remote_addr = 0;  // RDMA write only
  uint32_t rkey = 0;         // RDMA write only
};

struct RecvWr {
  uint64_t wr_id = 0;
  uint64_t local_addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

struct WorkCompletion {
  uint64_t wr_id = 0;
  int status = 0;  // IBV_WC_SUCCESS = 0; others are enum ibv_wc_status
  bool is_recv = false;
  uint32_t byte_len = 0;
};

class VerbsApi {
 public:
  virtual ~VerbsApi() = default;

  // Discovery. Zero devices is an empty list, not an error (a CPU node, or a kernel without
  // RDMA support).
  virtual Expected<std::vector<std::string>> list_devices() = 0;
  virtual Expected<DeviceAttr> query_device(const std::string& dev) = 0;
  virtual Expected<PortAttr> query_port(const std::string& dev, int port) = 0;
  // One GID table entry with its type and net device. An unused entry is a SysError with
  // err == ENODATA (what ibv_query_gid_ex reports), or an all-zero GID.
  virtual Expected<GidEntry> query_gid(const std::string& dev, int port, int index) = 0;

  // Data path.
  virtual Expected<Handle> open_device(const std::string& dev) = 0;
  virtual Expected<Handle> alloc_pd(Handle context) = 0;
  virtual Expected<MemoryRegion> reg_mr(Handle pd, void* addr, size_t length, int access) = 0;
  virtual Expected<Handle> create_cq(Handle context, int entries) = 0;
  // RC QP on pd with one CQ for sends and receives; qpn is the QP number to give the peer.
  virtual Expected<Handle> create_rc_qp(Handle pd, Handle cq, int max_send_wr, int max_recv_wr,
                                        uint32_t* qpn) = 0;
  virtual Expected<bool> modify_qp(Handle qp, const QpAttr& attr, int mask) = 0;
  virtual Expected<bool> post_send(Handle qp, const SendWr& wr) = 0;
  virtual Expected<bool> post_recv(Handle qp, const RecvWr& wr) = 0;
  // Up to max completions; waits at most timeout_ms for the first one (0: just look). An empty
  // result after the timeout is not an error: the caller decides what the silence means.
  virtual Expected<std::vector<WorkCompletion>> poll_cq(Handle cq, int max, int timeout_ms) = 0;

  // Teardown, reverse of creation. Failures are reported, never thrown: a destructor calls them.
  virtual int destroy_qp(Handle qp) = 0;
  virtual int destroy_cq(Handle cq) = 0;
  virtual int dereg_mr(Handle mr) = 0;
  virtual int dealloc_pd(Handle pd) = 0;
  virtual int close_device(Handle context) = 0;
};

}  // namespace fabkit::verbs
