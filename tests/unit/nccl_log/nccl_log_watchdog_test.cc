// PyTorch's ProcessGroupNCCL watchdog: a collective past its timeout, the watchdog meeting a CUDA
// error, its lines as terminals and pastes leave them. Each test uses the real lines of a public
// thread's log (named beside it); the held-out batch it came in is in
// tests/fixtures/nccl_log/real/README.md.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_log/nccl_log_classify.h"
#include "fabric/nccl_log/nccl_log_line.h"
#include "tests/unit/nccl_log/nccl_log_test_support.h"

namespace fabkit::nccl_log {
namespace {

using test_support::first_error;

// A terminal that hard-wrapped PyTorch's glog line mid-word (VLM-R1#257).
TEST(CollectiveLogWatchdog, WrappedGlogLineIsJoined) {
  const NcclLogSummary s = parse_nccl_log(
      "[rank6]:[E429 13:55:49.384372190 ProcessGroupNCCL.cpp:1743] [PG ID 0 PG GUID "
      "0(default_pg) Rank 6] ProcessGroupNCCL'\n"
      "s watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
      "collectives. This typically indi\n"
      "cates a NCCL/CUDA API (e.g., CudaEventDestroy) hang blocking the watchdog, and could be "
      "triggered by another thread \n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "watchdog_timeout");
  ASSERT_FALSE(s.failures.empty());
  const NcclLogError& e = s.errors.at(s.failures[0].first_error);
  EXPECT_EQ(e.rank, 6);
  EXPECT_EQ(e.line, 1);
}

// PyTorch's old glog line for a CUDA error met by its watchdog (vllm#4108) is a CUDA error.
TEST(CollectiveLogWatchdog, WatchdogDeviceRuntimeErrorIsThatKind) {
  const NcclLogSummary s = parse_nccl_log(
      "[E ProcessGroupNCCL.cpp:916] [Rank 0] NCCL watchdog thread terminated with exception: "
      "CUDA error: an illegal memory access was encountered\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "cuda_error");
  ASSERT_FALSE(s.failures.empty());
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).rank, 0);
}

// torch 2.8+'s "failure detected by watchdog" alone in a log (sgl-project/sglang#10216).
TEST(CollectiveLogWatchdog, FailureDetectedByWatchdogIsTheWatchdogsReport) {
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

// Batch 11: only the watchdog's C++ frames were pasted; checkTimeout throws for a timeout only
// (hiyouga/LlamaFactory#5558).
TEST(CollectiveLogWatchdog, WatchdogCheckTimeoutFrameIsAWatchdogTimeout) {
  NcclLogSummary s = parse_nccl_log(
      "mpi-rc1ou1aw-launcher: frame #0: c10::Error::Error(c10::SourceLocation, std::string) + "
      "0x57 (0x7f7b5ae35897 in /opt/env/lib/python3.10/site-packages/torch/lib/libc10.so)\n"
      "mpi-rc1ou1aw-launcher: frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::"
      "optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f7b5c10ec62 "
      "in /opt/env/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so)\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "watchdog_timeout");
  EXPECT_EQ(first_error(s).host, "mpi-rc1ou1aw-launcher");
}

// Batch 11: the watchdog's exception text wrapped by the terminal onto the next row, its rank on
// the first (huggingface/open-r1#620): one error, said by rank 2.
TEST(CollectiveLogWatchdog, WatchdogExceptionWrappedOntoTheNextRow) {
  NcclLogSummary s = parse_nccl_log(
      "  what():    what():    what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group "
      "watchdog thread terminated with exception: [Rank 2]\n"
      " Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, "
      "NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran f\n"
      "or 1800010 milliseconds before timing out.\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "watchdog_timeout");
  EXPECT_EQ(first_error(s).rank, 2);
  EXPECT_EQ(s.errors.size(), 1u);
}

// PyTorch's "Some NCCL operations have failed or timed out" with no watchdog line beside it
// (open-r1-multimodal#20, salesforce/MUST#7, held-out batch 16): the watchdog took the process down
// for a collective that did not complete.
TEST(CollectiveLogWatchdog, TakedownAloneIsAWatchdogTimeout) {
  NcclLogSummary s = parse_nccl_log(
      "[rank2]:[E220 01:25:08.728702337 ProcessGroupNCCL.cpp:681] [Rank 2] Some NCCL operations "
      "have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
      "operations might run on corrupted/incomplete data.\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "watchdog_timeout");
  ASSERT_FALSE(s.failures.empty());
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).rank, 2);
  s = parse_nccl_log(
      "[E ProcessGroupNCCL.cpp:341] Some NCCL operations have failed or timed out. Due to the "
      "asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
      "corrupted/incomplete data. To avoid this inconsistency, we are taking the entire process "
      "down.                                                                       \n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "watchdog_timeout");
}

// The takedown is printed before the watchdog's exception (LlamaFactory#6849): the exception's
// error names the cause even though it comes later in the log and is of the same tier, and the
// takedown is no second failure beside it.
TEST(CollectiveLogWatchdog, TakedownBeforeTheWatchdogsExceptionIsNotTheCause) {
  const NcclLogSummary s = parse_nccl_log(
      "[rank5]:[E207 19:37:09.983540349 ProcessGroupNCCL.cpp:681] [Rank 5] Some NCCL operations "
      "have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
      "operations might run on corrupted/incomplete data.\n"
      "[rank5]:[E207 19:37:09.983555114 ProcessGroupNCCL.cpp:695] [Rank 5] To avoid data "
      "inconsistency, we are taking the entire process down.\n"
      "[rank5]:[E207 19:37:09.983600771 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) "
      "Rank 5] Process group watchdog thread terminated with exception: NCCL error: remote process "
      "exited or there was a network error, NCCL version 2.21.5\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_remote_error");
  EXPECT_EQ(s.failures.size(), 1u);
}

// With the watchdog's own line after the takedown (NaviLLM#34, every line hard-wrapped at 102
// columns), that line is the one named, alone: it carries the collective, and the takedown only
// repeats it.
TEST(CollectiveLogWatchdog, TheWatchdogsLineNamesTheCollectiveAfterATakedown) {
  const NcclLogSummary s = parse_nccl_log(
      "[rank0]:[E ProcessGroupNCCL.cpp:537] Some NCCL operations have failed or timed out. Due to "
      "the asynchr\n"
      "onous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
      "data.\n"
      "[rank0]:[E ProcessGroupNCCL.cpp:1182] [Rank 0] NCCL watchdog thread terminated with "
      "exception: [Rank 0\n"
      "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLGATHER, "
      "NumelIn=1, NumelO\n"
      "ut=2, Timeout(ms)=600000) ran for 600168 milliseconds before timing out.\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "watchdog_timeout");
  ASSERT_FALSE(s.failures.empty());
  const NcclLogError& e = s.errors.at(s.failures[0].first_error);
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(s.failures[0].count, 1);
  EXPECT_NE(e.text.find("Watchdog caught collective operation timeout"), std::string::npos)
      << e.text;
}

}  // namespace
}  // namespace fabkit::nccl_log
