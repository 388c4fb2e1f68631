// Rules added after held-out batch 6 (tests/fixtures/nccl_log/real/README.md), each from the
// real lines of the log whose miss it answers.
#include <gtest/gtest.h>

#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_log/nccl_log_classify.h"
#include "fabric/nccl_log/nccl_log_line.h"

namespace fabkit::nccl_log {
namespace {

// A receive larger than what the peer posted, in the socket transport and in bootstrap, in
// 2.4 and 2.10+ wordings (nccl#268, nccl#626, nccl#1176); the socket transport's WARN names
// Socket; a Markdown bold line is read.
TEST(NcclLogBatch6, MessageTruncatedIsInvalidUsage) {
  NcclLogSummary s = parse_nccl_log(
      "**hvd1:2918:3333 [0] external/nccl_archive/src/transport/net_socket.cc:200 NCCL WARN "
      "NET/Socket : message truncated : receiving 696320 bytes instead of 32768**\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_invalid_usage");
  EXPECT_EQ(s.network.value_or("null"), "Socket");
  ASSERT_FALSE(s.failures.empty());
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).host, "hvd1");
  s = parse_nccl_log(
      "transport/net_socket.cc:424 NCCL WARN NET/Socket : peer 192.168.161.30<59210> message "
      "truncated :\nreceiving 1048576 bytes instead of 65536\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_invalid_usage");
  EXPECT_EQ(s.network.value_or("null"), "Socket");
  s = parse_nccl_log(
      "0: compute-st-p4de24xlarge-1:34639:36718 [5] bootstrap.cc:77 NCCL WARN Message truncated : "
      "received 256 bytes instead of 4\n"
      "0: compute-st-p4de24xlarge-1:34639:36718 [5] NCCL INFO bootstrap.cc:554 -> 3\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_invalid_usage");
  EXPECT_FALSE(s.network);
}

// A WARN without a rule followed by NCCL's error trace: the trace's return code names the kind
// (nccl#1529: NVML, -> 2; horovod#785: a CUDA IPC call, -> 1).
TEST(NcclLogBatch6, TraceReturnCodeNamesAnUnruledWarning) {
  NcclLogSummary s = parse_nccl_log(
      "ucpe-resource033018034100:6896:7103 [1] NCCL INFO Using network Socket\n"
      "ucpe-resource033018034100:6896:7103 [1] misc/nvmlwrap.cc:187 NCCL WARN "
      "nvmlDeviceGetHandleByPciBusId() failed: Not Found\n"
      "ucpe-resource033018034100:6896:7103 [1] NCCL INFO graph/xml.cc:850 -> 2\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_system_error");
  ASSERT_EQ(s.failures.size(), 1u);
  const NcclLogError& e = s.errors.at(s.failures[0].first_error);
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.text, "nvmlDeviceGetHandleByPciBusId() failed: Not Found");
  s = parse_nccl_log(
      "HOSTNAME:2753:2762 [0] transport/p2p.cu:548 NCCL WARN failed to open CUDA IPC handle : 64 "
      "peer access is not supported between these two devices\n"
      "HOSTNAME:2753:2762 [0] NCCL INFO init.cu:568 -> 1\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "cuda_error");
}

// PyTorch's old glog line for a CUDA error met by its watchdog (vllm#4108) is a CUDA error.
TEST(NcclLogBatch6, WatchdogCudaErrorIsACudaError) {
  const NcclLogSummary s = parse_nccl_log(
      "[E ProcessGroupNCCL.cpp:916] [Rank 0] NCCL watchdog thread terminated with exception: "
      "CUDA error: an illegal memory access was encountered\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "cuda_error");
  ASSERT_FALSE(s.failures.empty());
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).rank, 0);
}

}  // namespace
}  // namespace fabkit::nccl_log
