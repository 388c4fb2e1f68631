// Which error names the cause: unruled WARNs and NCCL's error trace, an exception's `Last error:` text,
// a program error before the peers went away.
// Each test uses the real lines of a public thread's log (named beside it); the held-out batch it
// came in is in tests/fixtures/nccl_log/real/README.md.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_log/nccl_log_classify.h"
#include "fabric/nccl_log/nccl_log_line.h"

namespace fabkit::nccl_log {
namespace {

// A WARN without a rule, from a process that logged INFO lines but no error trace ("-> N"),
// is one NCCL carried on from; a net plugin's own NET/<name> lines name its network
// (nccl-fastsocket#4). With a trace after it it is a failure of the kind its return code names
// (batch 6); without INFO lines it stays a failure.
TEST(CollectiveLogCause, WarningWithoutErrorTraceIsNoFailure) {
  const std::string info =
      "full-debug2-test-0:4300:4325 [0] NCCL INFO NET/FastSocket : Connected after 1000 "
      "retries.\n";
  const std::string warn =
      "full-debug2-test-0:4300:4325 [0] net_fastsocket.cc:785 NCCL WARN Maximum retry reached "
      "for accept 3.\n";
  NcclLogSummary s = parse_nccl_log(warn + info);
  EXPECT_FALSE(s.cause_kind);
  EXPECT_EQ(s.network.value_or("null"), "FastSocket");
  s = parse_nccl_log(
      warn + "full-debug2-test-0:4300:4325 [0] NCCL INFO transport/net.cc:592 -> 2\n" + info);
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_system_error");
  s = parse_nccl_log(warn);
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_warning");
}

// A WARN without a rule followed by NCCL's error trace: the trace's return code names the kind
// (nccl#1529: NVML, -> 2; horovod#785: a CUDA IPC call, -> 1).
TEST(CollectiveLogCause, TraceReturnCodeNamesAnUnruledWarning) {
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

// The `Last error:` text explains the exception's return-code summary: of two kinds of one tier
// it is the cause (verl-project/verl#108).
TEST(CollectiveLogCause, LastErrorTextExplainsTheException) {
  NcclLogSummary s = parse_nccl_log(
      "torch.distributed.DistBackendError: NCCL error in: "
      "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2615, unhandled system error (run with "
      "NCCL_DEBUG=INFO for details), NCCL version 2.24.3\n"
      "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
      "device error. \n"
      "Last error:\n"
      "[Service thread] Error encountered progressing operation=Connect, res=3, closing "
      "connection\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "proxy_failed");
  ASSERT_EQ(s.failures.size(), 2u);
  EXPECT_EQ(s.failures[1].kind, "nccl_system_error");
  EXPECT_EQ(s.failures[1].role, "consequence");
}

// Batch 12: a program error NCCL returned (invalid usage) before any peer went away is what made
// the others' bootstrap see a broken pipe (Lightning-AI/pytorch-lightning#8139).
TEST(CollectiveLogCause, InvalidUsageBeforeThePeersWentIsTheCause) {
  const std::string usage =
      "  RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1614378062065/work/torch/lib/"
      "c10d/ProcessGroupNCCL.cpp:825, invalid usage, NCCL version 2.7.8\n";
  const std::string pipe =
      "  vm1:7389:7453 [0] include/socket.h:421 NCCL WARN Call to recv failed : Broken pipe\n"
      "  vm1:7389:7453 [0] NCCL INFO include/socket.h:438 -> 2\n";
  NcclLogSummary s = parse_nccl_log(usage + "\n" + pipe);
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_invalid_usage");
  // After the peer went away, the invalid usage is the consequence (a communicator used after it
  // failed).
  s = parse_nccl_log(pipe + usage);
  EXPECT_EQ(s.cause_kind.value_or("none"), "broken_pipe");
}

// A receive larger than what the peer posted, in the socket transport and in bootstrap, in
// 2.4 and 2.10+ wordings (nccl#268, nccl#626, nccl#1176); the socket transport's WARN names
// Socket; a Markdown bold line is read.
TEST(CollectiveLogCause, MessageTruncatedIsInvalidUsage) {
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

}  // namespace
}  // namespace fabkit::nccl_log
