// Baselines for node reports: this node's RDMA ports and GPUs compared with a saved report of the
// same node, and the expected figure "every ACTIVE port runs at the rate of the node's other ports
// of its link layer" (a port that trained to a lower width or speed is a cable or transceiver).
// A pure judge, like pair_baseline.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"
#include "reports/baseline/gpu_active_baseline.h"
#include "reports/baseline/node_baseline_pcie.h"
#include "reports/baseline/node_baseline_roce_qos.h"

namespace fabkit::reports::baseline {

struct PortRow {
  std::string port;  // "mlx5_0:1"
  std::string link_layer;
  std::string old_state, new_state;  // "" = absent from that report
  std::optional<double> old_rate_gbps, new_rate_gbps;
};

// What one GPU's error counters gained since the baseline (node_baseline_gpu.cc); nullopt where
// either report lacks the counter.
struct GpuHealthRow {
  std::string gpu;          // "GPU 3 (0000:9a:00.0)" in the new report
  std::string uuid;         // the match key (UUID, else bus id)
  std::string ecc_counter;  // "aggregate" or "volatile": which ECC counter was compared
  std::optional<double> ecc_uncorrected_new, ecc_corrected_new, remapped_rows_new,
      nvlink_errors_new;
};

struct NodeBaselineResult {
  std::vector<PortRow> ports;
  std::optional<double> old_gpus, new_gpus;
  std::vector<GpuHealthRow> gpu_health;
  PcieBaseline pcie;             // PCIe links, AER totals and Xids (node_baseline_pcie.h)
  GpuActiveBaseline gpu_active;  // the --active figures, when either report has them
  RoceQosBaseline roce_qos;      // RoCE QoS settings, when either report has a RoCE port
  std::vector<Finding> findings;
};

// Throws std::invalid_argument naming the document ("old"/"new") and field when one is not a node
// report or a figure has the wrong type.
NodeBaselineResult compare_node_baseline(const Json& old_doc, const Json& new_doc);
// The expected figure alone (used by the comparison on the new report): ACTIVE ports slower than
// the fastest ACTIVE port of the same link layer on this node.
std::vector<Finding> judge_port_rates(const std::vector<PortRow>& ports);
// Per GPU in both reports: new ECC errors (fail when uncorrectable), new remapped rows and NVLink
// errors (warn), appended to findings. Throws std::invalid_argument naming a wrong-typed field.
std::vector<GpuHealthRow> compare_gpu_health(const Json& old_doc, const Json& new_doc,
                                             std::vector<Finding>& findings);

Json node_baseline_to_json(const NodeBaselineResult& r, const std::string& old_path,
                           const std::string& new_path);
std::string node_baseline_table_text(const NodeBaselineResult& r);

}  // namespace fabkit::reports::baseline
