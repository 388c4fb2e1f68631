// Pieces shared by the text renderers of reports/text (not a public interface).
#pragma once

#include <ostream>
#include <string>

#include "common/json.h"
#include "common/report.h"
#include "reports/json/member.h"

namespace fabkit::reports::text {

// A figure with `digits` decimals, "-" when j is not a number (an absent measurement).
std::string fixed(const Json& j, int digits);
// j's string value made terminal_safe (terminal_safe.h), or `otherwise` when j is not a string
// (null where nothing was measured).
std::string str(const Json& j, const std::string& otherwise = "-");

// SGR colors for words that carry a verdict (FAIL, SLOW, FAILED…); plain when color is off.
struct Style {
  bool color = false;
  std::string bad(const std::string& s) const { return color ? "\033[1;31m" + s + "\033[0m" : s; }
  std::string warn(const std::string& s) const { return color ? "\033[1;33m" + s + "\033[0m" : s; }
  std::string note(const std::string& s) const { return color ? "\033[36m" + s + "\033[0m" : s; }
};

// The kind-specific part of a text report, before the findings. Each prints nothing when its
// section is absent.
void render_pair_section(const Json& pair, std::ostream& out, const Style& style);
void render_pair_group_section(const Json& group, std::ostream& out, const Style& style);
void render_cluster_section(const Json& cluster, std::ostream& out, const Style& style);
void render_plan_section(const Json& plan, std::ostream& out);
// A node report's facts: RDMA ports, interfaces (NCCL's pick and fabcheck's), limits, GPUs.
void render_node_facts(const Report& node, std::ostream& out, const Style& style);
// The `gpus` section's health table and one line per GPU naming its warn/fail findings
// (gpu_health_text.cc); nothing without GPUs.
void render_gpu_health(const Json& gpus, const std::vector<Finding>& findings, std::ostream& out,
                       const Style& style);
// A node report's PCIe links and kernel log events (pcie_text.cc), after the facts above.
void render_pcie_and_kernel_log(const Report& node, std::ostream& out, const Style& style);
// A node report's RoCE QoS per port (roce_qos_text.cc); nothing when there is no RoCE port.
void render_roce_qos(const Report& node, std::ostream& out, const Style& style);
// A node report's IB QoS per port (ib_qos_text.cc); nothing when there is no IB port.
void render_ib_qos(const Report& node, std::ostream& out, const Style& style);
// A node report's EFA line (efa_text.cc): instance, EFA devices against its type, huge pages;
// nothing on a node that is neither a known EFA type nor has EFA devices.
void render_efa(const Report& node, std::ostream& out, const Style& style);

}  // namespace fabkit::reports::text
