// Text helpers of the NCCL log parser (nccl_log_parse.cc): NCCL's device and channel lines, a
// pasted log's Markdown links, NCCL's return codes as failure kinds. Pure; internal to
// fabric/nccl_log.
#pragma once

#include <string>
#include <string_view>

#include "fabric/nccl_log/nccl_failure_kinds.h"
#include "fabric/nccl_log/nccl_log.h"

namespace fabkit::nccl_log {

std::string trim_copy(std::string_view s);
bool ascii_only(std::string_view s);
// "[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>" into s.hcas, hca_link_layers and
// ib_oob_interface.
void parse_ib_using(const std::string& msg, NcclLogSummary& s);
// A net plugin's network name without the plugin API it was built for: "IBext_v8" -> "IBext".
std::string network_name(std::string net);
// "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA"; false for any other line.
bool parse_channel(std::string_view msg, NcclChannelLine* out);
std::string strip_markdown_links(std::string_view raw);
const char* kind_of_return_code(int code, bool in_bootstrap);
// The kind's meaning and its likely causes, numbered, as one sentence.
std::string explain(const FailureKind& k);

}  // namespace fabkit::nccl_log
