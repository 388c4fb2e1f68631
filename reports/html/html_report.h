// The offline HTML report: one self-contained file (inline CSS, SVG drawn by reports/chart, no
// script, nothing fetched), rendered from the JSON documents fabkit already writes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "reports/input_document.h"

namespace fabkit::reports::html {

// The expected-performance band of the busbw plots, as fractions of the link rate. A healthy
// fabric's all-reduce busbw at large messages lands at about 80-95% of the line rate (protocol
// headers, PCIe and reduction cost the rest); below 80% is worth a look. Drawn, not judged: the
// judge with a threshold is `fabcheck report --baseline` (docs/reports.md).
inline constexpr double kBandLow = 0.80;
inline constexpr double kBandHigh = 0.95;

// The whole page; throws std::invalid_argument naming the file and field of a malformed input.
std::string render_html(const std::vector<InputDocument>& inputs, const std::string& generated_at);

// Sections, each an HTML fragment (tested on their own).
std::string findings_table(const Json& findings);
std::string node_section(const Json& doc);
// The node page's GPU health table (html_gpu.cc); empty without GPUs.
std::string gpu_section(const Json& gpus);
// A node report's PCIe links and kernel log events (html_pcie.cc; part of node_section).
std::string pcie_and_kernel_log_section(const Json& doc);
// A node report's RoCE QoS table (html_roce_qos.cc; part of node_section); "" without RoCE ports.
std::string roce_qos_section(const Json& doc);
// A node report's IB QoS table (html_ib_qos.cc; part of node_section); "" without IB ports.
std::string ib_qos_section(const Json& doc);
std::string pair_section(const Json& doc);
std::string cluster_section(const Json& doc);
// Round-trip histograms (html_latency.cc): a pair report's links[] (chosen first), a cluster
// report's matrix.pairs[] (chosen links merged, medians listed); "no latency samples" without any.
std::string pair_latency(const Json& links);
std::string cluster_latency(const Json& pairs);
// The RDMA RC send latency per rail (pair.rdma_rc.pairs[].lat_histogram), median and p99 marked.
std::string rc_latency(const Json& rc_pairs);
std::string profile_section(const Json& doc);
std::string metrics_section(const std::vector<Json>& records);

std::string escape(const std::string& s);
// Byte counts for tables: "256 KiB", "8 MiB", "8 B".
std::string iec_bytes(double v);

// Field access for renderers: absent or null -> nullopt; present with another type -> throws
// std::invalid_argument naming `where` and the key.
std::optional<double> opt_number(const Json& j, const char* key, const std::string& where);
std::string opt_string(const Json& j, const char* key, const std::string& where);
const Json& opt_array(const Json& j, const char* key, const std::string& where);

}  // namespace fabkit::reports::html
