// Rules added after held-out batch 7 (tests/fixtures/nccl_log/real/README.md), each from the
// real lines of the log whose miss it answers.
#include <gtest/gtest.h>

#include "fabric/nccl_log/nccl_log.h"

namespace fabkit::nccl_log {
namespace {

// Ray's deduplication suffix is Ray's words, not part of the network's name
// (awslabs/awsome-distributed-ai#386).
TEST(NcclLogBatch7, RayRepeatSuffixIsNotPartOfTheNetwork) {
  const std::string ray = "(RayTrainWorker pid=954, ip=10.67.132.202) ";
  NcclLogSummary s = parse_nccl_log(
      ray +
      "ini-worker-ray-worker-p5:954:3133 [6] nccl_net_ofi_create_plugin:1067 NCCL WARN NET/OFI "
      "aws-ofi-nccl initialization failed [repeated 15x across cluster]\n" +
      ray +
      "ini-worker-ray-worker-p5:954:3133 [6] NCCL INFO NET/Socket : Using "
      "[0]eth0:10.67.132.202<0> [repeated 15x across cluster]\n" +
      ray +
      "ini-worker-ray-worker-p5:954:3133 [6] NCCL INFO Using network Socket [repeated 15x "
      "across cluster]\n");
  EXPECT_EQ(s.network.value_or("null"), "Socket");
  EXPECT_EQ(s.cause_kind.value_or("none"), "plugin_init_failed");
}

// NCCL 2.19+ logs each connect retry at INFO; the last one is the failed connect even when the
// WARN after it was not pasted (hiyouga/LlamaFactory#8045). Earlier retries are no failure.
TEST(NcclLogBatch7, TheLastConnectRetryIsAConnectFailure) {
  const std::string retry =
      "zgiot:1183664:1184669 [0] NCCL INFO socketPollConnect: connect returned No route to host, "
      "retrying (";
  NcclLogSummary s = parse_nccl_log(retry + "33/34) after sleep for 3300 msec\n" + retry +
                                    "34/34) after sleep for 3400 msec\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "connect_failed");
  ASSERT_FALSE(s.failures.empty());
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).host, "zgiot");
  s = parse_nccl_log(retry + "3/34) after sleep for 300 msec\n" +
                     "zgiot:1183664:1184669 [0] NCCL INFO Connected all rings\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "none");
}

// A quote that kept NCCL's source location but not its host: "graph/topo.h:230" is where the
// WARN came from (it names the kind), not a host; graph/search.cc's fallback to the simple order
// is no failure (NVIDIA-NeMo/Run#266).
TEST(NcclLogBatch7, BareSourceLocationIsTheFileNotAHost) {
  NcclLogSummary s = parse_nccl_log(
      "graph/search.cc:1135 NCCL WARN Could not find a path for pattern 1, falling back to simple "
      "order\n"
      "graph/topo.h:230 NCCL WARN Could not find NET with id 0\n"
      "torch.distributed.DistBackendError: NCCL error in: "
      "/opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3376, internal error "
      "- please report this issue to the NCCL developers, NCCL version 2.25.1\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_internal_error");
  ASSERT_FALSE(s.failures.empty());
  const NcclLogError& first = s.errors.at(s.failures[0].first_error);
  EXPECT_EQ(first.host, "");
  EXPECT_EQ(first.line, 2);
}

}  // namespace
}  // namespace fabkit::nccl_log
