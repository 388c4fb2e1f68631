// Probe 12, InfiniBand QoS: whether the service level NCCL's QPs use reaches a virtual lane that
// carries data. On IB the SL a QP uses (NCCL_IB_SL, default 0) picks the VL through the port's
// SLtoVLMappingTable, which the subnet manager programs: an SL mapped to VL15 (the management
// lane) is dropped, one mapped to a VL at or above the port's OperationalVLs likewise, and a job
// that uses it hangs. The SM's QoS policy also answers, in the PathRecord, the SL a path should
// use. Per IB port it gathers, through MadTransport (mad_transport.h: libibumad, or a replay):
//  - SubnGet(PortInfo): LID, the master SM's LID and SL, VLCap, OperationalVLs;
//  - SubnGet(SLtoVLMappingTable) of the port (a CA port has one table);
//  - SubnAdmGet(PathRecord) for the port's own GID to itself (and to a peer's GID when known).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "probes/ib_qos/mad_codec.h"
#include "probes/probe_context.h"

namespace fabkit::probes {

class MadTransport;
struct RdmaFacts;
struct NcclEnvFacts;

struct IbPathQuery {
  std::string dgid;
  // "ok"; "no_record" (the SA answered with an error status: detail has it); "error" (the
  // exchange failed or the reply was malformed: detail says how).
  std::string status;
  std::string detail;
  std::optional<PathRecordQos> record;
};

struct IbQosPort {
  std::string device;  // "mlx5_0"
  int port = 0;
  bool active = false;
  std::string gid;  // GID index 0 (the port's own, subnet prefix + port GUID)
  // "ok" | "unavailable" (no MAD can be sent: detail says why) | "error" | "not_read" (--sysroot
  // without --ib-qos-replay).
  std::string status = "not_read";
  std::string detail;
  std::optional<PortInfoQos> port_info;
  std::optional<std::array<int, 16>> sl2vl;
  std::vector<IbPathQuery> paths;  // [0]: to its own GID; then to the peer's, when asked
};

struct IbQosFacts {
  std::string source = "live";  // "live" | "replay" | "sysroot"
  std::string replay_file;
  // Whether MADs can be sent from this host at all: "ok", "unavailable" (transport_detail says
  // why: no /dev/infiniband/umad*, ...) or "not_read" (--sysroot).
  std::string transport_status = "not_read";
  std::string transport_detail;
  std::optional<std::string> nccl_ib_sl;  // NCCL_IB_SL as set (environment or nccl.conf)
  std::string nccl_ib_sl_source;
  std::vector<IbQosPort> ports;  // every RDMA port whose link layer is InfiniBand
};

// The SL NCCL's QPs will use: NCCL_IB_SL when it is a number 0..15, else NCCL's default 0.
// `invalid` is set when NCCL_IB_SL is set but not 0..15.
int nccl_sl(const IbQosFacts& facts, bool* invalid = nullptr);

// The live transport unless ctx.options.ib_qos_replay names a fixture; under --sysroot without a
// replay every port stays "not_read". `peer_gid` (fabcheck pair) adds a PathRecord to it.
IbQosFacts gather_ib_qos(const ProbeContext& ctx, const RdmaFacts& rdma, const NcclEnvFacts& nccl,
                         const std::string& peer_gid = "");
// One port through `transport` (the facts' status, detail and answers filled in).
void read_ib_port_qos(MadTransport& transport, IbQosPort& port, const std::string& peer_gid,
                      int timeout_ms = 1000);

// Pure.
std::vector<Finding> judge_ib_qos(const IbQosFacts& facts);
Json to_json(const IbQosFacts& facts);

}  // namespace fabkit::probes
