// The text of `fabcheck nccl-log` (and of fabtrain's explanation of a failed collective) on real
// logs of failed jobs (tests/fixtures/nccl_log/real): the cause with its meaning, ordered causes,
// fix and first sayer; the others as its consequences; the per-rank view.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "fabric/nccl_log/nccl_log.h"
#include "reports/report_render.h"
#include "reports/text/nccl_log_text.h"

namespace fabkit::reports::text {
namespace {

std::string explain(const std::string& name) {
  std::ifstream in(std::string(FABKIT_FIXTURES) + "/nccl_log/real/" + name);
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  std::ostringstream out;
  render_nccl_log_section(nccl_log::to_json(nccl_log::parse_nccl_log(ss.str())), out, Style{});
  return out.str();
}

bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

TEST(NcclLogText, TheCauseIsExplainedAndTheRestAreItsConsequences) {
  const std::string t = explain("nccl_1235_closed_then_oom.log");
  EXPECT_TRUE(has(t, "out_of_memory — GPU out of memory (the cause)")) << t;
  EXPECT_TRUE(has(t, "what it means: a CUDA allocation NCCL made")) << t;
  EXPECT_TRUE(has(t, "said first by: ng30903:3063028 [3] at line 14")) << t;
  EXPECT_TRUE(has(t, "likely causes, most likely first:\n      1. ")) << t;
  EXPECT_TRUE(has(t, "    fix: lower the batch")) << t;
  EXPECT_TRUE(has(t, "consequences of out_of_memory")) << t;
  EXPECT_TRUE(has(t, "peer_closed   consequence")) << t;
  EXPECT_TRUE(has(t, "per rank/process")) << t;
}

TEST(NcclLogText, PeerAndRankOfTheFirstSayer) {
  const std::string t = explain("llamafactory_6849_remote_error_broken_pipe.log");
  EXPECT_TRUE(has(t, "broken_pipe — broken pipe (the cause)")) << t;
  EXPECT_TRUE(has(t, "said first by: rank 5 at line 10, peer 10.119.24.53<49901>")) << t;
  EXPECT_TRUE(has(t, "nccl_remote_error")) << t;  // PyTorch's wrapper: a consequence
}

TEST(NcclLogText, AHealthyLogNamesNoFailure) {
  const std::string t = explain("nccl_1267_plugin_symbol_socket.log");
  EXPECT_TRUE(has(t, "NCCL log: network Socket")) << t;
  EXPECT_TRUE(has(t, "failure: none named")) << t;
}

}  // namespace
}  // namespace fabkit::reports::text
