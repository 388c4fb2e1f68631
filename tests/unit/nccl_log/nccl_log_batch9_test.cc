// Rules added after held-out batch 9 (tests/fixtures/nccl_log/real/README.md), each from the
// real lines of the log whose miss it answers.
#include <gtest/gtest.h>

#include <string>

#include "fabric/nccl_log/nccl_log.h"

namespace fabkit::nccl_log {
namespace {

// A terminal paste joined the screen's rows, each padded with spaces (deepseek-ai/DeepEP#106).
TEST(NcclLogBatch9, PaddedRowsOfATerminalPasteAreReadApart) {
  const std::string pad(150, ' ');
  NcclLogSummary s = parse_nccl_log(
      "tos:11978:12642 [0] ib_plugin.c:1075 NCCL WARN NET/IB : Got completion from peer "
      "172.21.17.89<38536> with error 5, opcode 48, len 32710, vendor err 249" +
      pad + "VM-17-82-centos:11978:12642 [0] NCCL INFO transport/net.cc:1125 -> 6" + pad + "\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "work_request_flushed");
  EXPECT_EQ(s.network.value_or("null"), "IB");
  // Short runs of spaces (aligned columns) do not split a line.
  s = parse_nccl_log("h:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with "
                     "error 12,          opcode 0, len 0, vendor err 129\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "transport_retry_exceeded");
}

// torch 2.8+'s "failure detected by watchdog" alone in a log (sgl-project/sglang#10216).
TEST(NcclLogBatch9, FailureDetectedByWatchdogIsTheWatchdogsReport) {
  NcclLogSummary s = parse_nccl_log(
      "[rank1]:[E909 08:45:30.126335825 ProcessGroupNCCL.cpp:2252] [PG ID 2 PG GUID 3 Rank 1]  "
      "failure detected by watchdog at work sequence id: 40231 PG status: last enqueued work: "
      "40267, last completed work: 40230\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "watchdog_timeout");
  // An error line that names the cause outranks it.
  s = parse_nccl_log(
      "h:1:2 [1] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error 12, opcode 0, "
      "len 0, vendor err 129\n"
      "[rank1]:[E909 08:45:30.126335825 ProcessGroupNCCL.cpp:2252] [PG ID 2 PG GUID 3 Rank 1]  "
      "failure detected by watchdog at work sequence id: 40231\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "transport_retry_exceeded");
}

// A GID table change is NCCL's warning; completion errors that follow on that host make it the
// cause (NVIDIA/nccl#394); alone it is no failure.
TEST(NcclLogBatch9, GidChangeBeforeCompletionErrorsIsTheirCause) {
  const std::string change =
      "> node01: VM-0-14-centos:106:196 [0] transport/net_ib.cc:73 NCCL WARN NET/IB : Got async "
      "event : GID table change\n";
  NcclLogSummary s = parse_nccl_log(
      change +
      "> node01: VM-0-14-centos:108:593 [0] transport/net_ib.cc:816 NCCL WARN NET/IB : Got "
      "completion with error 12, opcode 0, len 32633, vendor err 129\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "ib_async_error");
  ASSERT_EQ(s.failures.size(), 2u);
  EXPECT_EQ(s.failures[1].kind, "transport_retry_exceeded");
  EXPECT_EQ(s.failures[1].role, "consequence");
  s = parse_nccl_log(change);
  EXPECT_EQ(s.cause_kind.value_or("none"), "none");
  // A completion error on another host is not the change's.
  s = parse_nccl_log(change +
                     "other:1:2 [0] transport/net_ib.cc:816 NCCL WARN NET/IB : Got completion "
                     "with error 12, opcode 0, len 32633, vendor err 129\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "transport_retry_exceeded");
}

// nccl-tests of 2017-2018 wrote "Cuda failure common.cu:N 'x'" without "Test"
// (NVIDIA/nccl-tests#2).
TEST(NcclLogBatch9, OldNcclTestsCudaFailure) {
  NcclLogSummary s = parse_nccl_log(
      ">> nThread 1 nGpus 1 minBytes 33554432 maxBytes 134217728 step: 2(factor) warmup iters: 5 "
      "iters: 20 validation: 0\n"
      ">> Cuda failure common.cu:891 'invalid device ordinal'\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "cuda_error");
}

// Who said it first, in three line shapes of batches 7 and 9: a block pasted between backticks
// keeps its first line's host (NVIDIA/nccl#1814, aws-ofi-nccl#156), horovodrun's "[1]<stderr>:"
// names rank 1 (pytorch/ignite#3466), and a host named after its address is no date
// (pytorch/pytorch#124380).
TEST(NcclLogBatch9, FirstSayerThroughBackticksHorovodTagsAndAddressHostnames) {
  NcclLogSummary s = parse_nccl_log(
      "`hostname-test:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
      "172.36.143.59<44206> with status=12 opcode=129 len=65536 vendor err 129 (Recv)\n");
  ASSERT_FALSE(s.failures.empty());
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).host, "hostname-test");
  s = parse_nccl_log(
      "[1]<stderr>:RuntimeError: ncclCommInitRank failed: unhandled cuda error (run with "
      "NCCL_DEBUG=INFO for details)\n");
  ASSERT_FALSE(s.failures.empty());
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).rank.value_or(-1), 1);
  s = parse_nccl_log(
      "10-12-3-162:7992:8059 [2] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by "
      "remote peer 10-12-3-162<55133>\n");
  ASSERT_FALSE(s.failures.empty());
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).host, "10-12-3-162");
}

}  // namespace
}  // namespace fabkit::nccl_log
