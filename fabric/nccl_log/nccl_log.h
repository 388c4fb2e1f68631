// Parser of NCCL_DEBUG=INFO logs: which network NCCL really used, over which HCAs, with or
// without GPUDirect RDMA, and what went wrong. Pure: text in, summary out.
// The trap it avoids: NCCL prints `NET/Socket` and `Bootstrap` lines even when IB carries the
// traffic (the bootstrap and the OOB channel are always TCP). The decision is the `Using network`
// line and the `via NET/<name>/...` channel lines, never the mere presence of NET/Socket.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"

namespace fabkit::nccl_log {

struct NcclLogError {
  int line = 0;       // 1-based line number in the log
  std::string kind;   // ibv_reg_mr_failed, transport_retry_exceeded, ...
  std::string text;   // the log line (trimmed of its host:pid:tid prefix)
  std::string cause;
  std::string fix;
};

struct NcclChannelLine {
  int line = 0;
  std::string network;  // "IB", "Socket", "AWS Libfabric", ...
  int device = -1;
  bool gdr = false;
};

struct NcclLogSummary {
  std::optional<std::string> version;            // "2.18.5+cuda12.2"
  std::optional<std::string> network;            // "IB" | "RoCE" | "Socket" | plugin name
  std::optional<std::string> network_evidence;   // "Using network IB (line 12)"
  std::vector<std::string> networks_seen;        // every `Using network` value, in order
  std::vector<std::string> hcas;                 // "mlx5_0:1" from `NET/IB : Using`
  std::vector<std::string> hca_link_layers;      // "IB" | "RoCE", parallel to hcas
  std::optional<std::string> ib_oob_interface;   // "eth0:10.0.0.1<0>" from `; OOB ...`
  std::vector<std::string> socket_interfaces;    // from `NET/Socket : Using`
  std::optional<std::string> bootstrap_interface;  // "eth0:10.0.0.1<0>"
  std::optional<std::string> plugin;             // net plugin that loaded, when one did
  bool plugin_absent = false;                    // "No plugin found": internal IB/Socket used
  std::optional<bool> gdr;                       // null: no network channel lines seen
  int net_channel_lines = 0;
  int intra_node_channel_lines = 0;              // P2P / SHM channels (no network involved)
  bool ib_disabled = false;                      // NCCL_IB_DISABLE seen, or IB init failed
  bool ib_no_device = false;                     // "NET/IB : No device found."
  std::vector<NcclLogError> errors;
  int lines = 0;
};

NcclLogSummary parse_nccl_log(const std::string& text);
Json to_json(const NcclLogSummary& s);
// expected_network: what the caller meant to use ("IB", "RoCE", "Socket", a plugin name).
std::vector<Finding> judge_nccl_log(const NcclLogSummary& s,
                                    std::optional<std::string> expected_network);

}  // namespace fabkit::nccl_log
