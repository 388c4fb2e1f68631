// Prometheus text exposition (format 0.0.4), for node_exporter's textfile collector: the key
// figures of node, pair and cluster reports as gauges. Rendered from the JSON documents.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/json.h"

namespace fabkit::reports::prom {

struct Sample {
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};
struct Family {
  std::string name, help, type = "gauge";
  std::vector<Sample> samples;
};

// `# HELP`, `# TYPE`, then one line per sample; families without samples are left out (the
// format forbids nothing, but an empty family only confuses readers).
std::string render(const std::vector<Family>& families);
// Label values: backslash, double quote and newline escaped (\\, \", \n) as the format requires.
std::string escape_label_value(const std::string& v);
// HELP text: backslash and newline escaped.
std::string escape_help(const std::string& v);
// Go's ParseFloat forms: "+Inf", "-Inf", "NaN", else the shortest round-tripping decimal.
std::string format_value(double v);

// fabkit_node_findings{severity}, fabkit_node_finding{code,severity}, fabkit_node_hca_port_* per
// device/port, fabkit_node_interface_* per interface, memlock limits, GPU count. Throws
// std::invalid_argument naming a field of the wrong type. The one node renderer: `fabcheck node
// --prom` (the Slurm health check's textfile) and `fabcheck report --prom node.json` both use it.
std::vector<Family> node_families(const Json& node_report);
// fabkit_node_gpu_*: per GPU ECC counts, remapped rows, clock event reasons (0/1 per reason),
// temperature, NVLink state and error counters, PCIe generation/width (prom_gpu.cc); part of
// node_families.
std::vector<Family> gpu_health_families(const Json& node_report);
// The node report's PCIe and kernel log families (prom_pcie.cc; part of node_families):
// fabkit_node_pcie_link_generation / _width_lanes {bus_id,role,state=current|capable},
// fabkit_node_pcie_link_degraded, fabkit_node_pcie_aer_errors_total {bus_id,role,severity},
// fabkit_node_kernel_log_readable, fabkit_node_xid_events {xid,bus_id,class},
// fabkit_node_kernel_log_events {kind,device}.
std::vector<Family> pcie_families(const Json& node_report);
// The node report's RoCE QoS families (prom_roce_qos.cc; part of node_families):
// fabkit_node_roce_nccl_priority, fabkit_node_roce_pfc_on_nccl_priority,
// fabkit_node_roce_ecn_on_nccl_priority {point}, fabkit_node_roce_qos_counter_total {counter},
// each labelled {device,port,netdev}.
std::vector<Family> roce_qos_families(const Json& node_report);
// The node report's IB QoS families (prom_ib_qos.cc; part of node_families):
// fabkit_node_ib_nccl_vl, fabkit_node_ib_data_vls, fabkit_node_ib_path_record_sl, each labelled
// {device,port}.
std::vector<Family> ib_qos_families(const Json& node_report);
// fabkit_node_check_timestamp_seconds: when the check ran, so an alert can fire on a stale file.
Family check_timestamp(double unix_time_s);
// fabkit_pair_busbw_bytes_per_second{transport,bytes}, peak, link rate, findings.
std::vector<Family> pair_families(const Json& pair_report);
// fabkit_cluster_*: findings, per node (check ok, slow, score) and per pair (ok, state,
// bandwidth, RTT, link rate) of a `fabcheck cluster` report (prom_cluster.cc). A --plan-only
// report has no figures: std::invalid_argument saying so.
std::vector<Family> cluster_families(const Json& cluster_report);
// fabkit_cluster_check_timestamp_seconds: when `fabcheck cluster --prom` finished.
Family cluster_check_timestamp(double unix_time_s);

}  // namespace fabkit::reports::prom
