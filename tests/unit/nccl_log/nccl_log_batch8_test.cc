// Rules added after held-out batch 8 (tests/fixtures/nccl_log/real/README.md), each from the
// real lines of the log whose miss it answers.
#include <gtest/gtest.h>

#include "fabric/nccl_log/nccl_log.h"

namespace fabkit::nccl_log {
namespace {

// XLA/JAX quote NCCL's last warning in their own error (marin-community/marin#7018).
TEST(NcclLogBatch8, XlaLastNcclWarningIsRead) {
  NcclLogSummary s = parse_nccl_log(
      "Failed to create NCCL communicator: INTERNAL: ncclCommInitRankConfig(...) failed:\n"
      "invalid usage ... Last NCCL warning(error): 'Bootstrap : no socket interface found'\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "no_socket_interface");
}

// misc/shmutils.cc's CUDA failure is the /dev/shm segment's (NVIDIA/nccl#1518).
TEST(NcclLogBatch8, CudaFailureInShmutilsIsTheShmSegment) {
  NcclLogSummary s = parse_nccl_log(
      "[1] misc/shmutils.cc:103 NCCL WARN Cuda failure 'invalid argument'\n"
      "[1] misc/shmutils.cc:114 NCCL WARN Error while creating shared memory segment "
      "/dev/shm/nccl-NzwJ7O (size 9637888)\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "shm_exhausted");
  // A CUDA failure elsewhere stays a CUDA error.
  s = parse_nccl_log("h:1:2 [1] include/alloc.h:103 NCCL WARN Cuda failure 'invalid argument'\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "cuda_error");
}

// A quote of NCCL's message without its prefix is read as NCCL's words (NVIDIA/nccl#1664).
TEST(NcclLogBatch8, BareNetMessageIsNcclsOwnWords) {
  NcclLogSummary s = parse_nccl_log(
      "NET/IBP:Got completion from peer 7.6.13.83<36315> with status=12 opcode=32698 len=32696 "
      "vendor err 129 (Send)\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "transport_retry_exceeded");
  EXPECT_FALSE(s.network);
}

// Before 2.13 enqueue.cc returned ncclInternalError after "Error : no algorithm/protocol
// available" (NVIDIA/nccl#653, Slurm labels and an empty host column).
TEST(NcclLogBatch8, OldNoAlgorithmWordingIsAnInternalError) {
  NcclLogSummary s = parse_nccl_log(
      "201: :41367:41367 [1] enqueue.cc:422 NCCL WARN Error : no algorithm/protocol available\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_internal_error");
}

// The `Last error:` text explains the exception's return-code summary: of two kinds of one tier
// it is the cause (verl-project/verl#108).
TEST(NcclLogBatch8, LastErrorTextExplainsTheException) {
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

}  // namespace
}  // namespace fabkit::nccl_log
