// Wordings of other NCCL, plugin, nccl-tests and framework versions: the same failure said another
// way, or NCCL's text quoted without its prefix. Each test uses the real lines of a public thread's
// log (named beside it); the held-out batch it came in is in
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
using test_support::kind_of;

// NCCL's wordings that had no rule: the HCA's asynchronous events (nccl#230, lit-llama#380,
// nccl#1710, nccl#1905), the rings' consistency check (nccl#879, nccl#520) and the bootstrap
// root refusing a second check-in (Lightning#14986).
TEST(CollectiveLogWording, WordingsOfOtherVersions) {
  EXPECT_EQ(kind_of("container-e275-1553839402050-12124-01-000057:815:864 [0] "
                    "transport/net_ib.cu:80 NCCL WARN NET/IB : Got async event : local "
                    "catastrophic error"),
            "ib_async_error");
  EXPECT_EQ(kind_of("container-e275-1553839402050-12124-01-000057:815:864 [0] "
                    "misc/ibvwrap.cu:220 NCCL WARN Call to ibv_get_async_event failed"),
            "ib_async_error");
  EXPECT_EQ(kind_of("...-48:34050:34121 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async "
                    "event : port error"),
            "ib_async_error");
  EXPECT_EQ(kind_of("h100-28:238:1219 [0] transport/net_ib.cc:180 NCCL WARN NET/IB : mlx5_ib0:1 "
                    "async fatal event on QP (0x7f69f01519a8): local access violation work queue "
                    "error"),
            "ib_async_error");
  EXPECT_EQ(kind_of("pytorch card-16-final-4509-master-0:22789:28201 [0] graph/rings.cc:38 NCCL "
                    "WARN Error : ring 0 does not loop back to start (14 != 0)"),
            "nccl_internal_error");
  EXPECT_EQ(kind_of("hpc-25-14:18569:18835 [0] bootstrap.cc:131 NCCL WARN Bootstrap Root : rank 1 "
                    "of 8 ranks has already checked in"),
            "bootstrap_failed");
}

// A quote that kept NCCL's source location but not its host: "graph/topo.h:230" is where the
// WARN came from (it names the kind), not a host; graph/search.cc's fallback to the simple order
// is no failure (NVIDIA-NeMo/Run#266).
TEST(CollectiveLogWording, BareSourceLocationIsTheFileNotAHost) {
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

// XLA/JAX quote NCCL's last warning in their own error (marin-community/marin#7018).
TEST(CollectiveLogWording, XlaLastLibraryWarningIsRead) {
  NcclLogSummary s = parse_nccl_log(
      "Failed to create NCCL communicator: INTERNAL: ncclCommInitRankConfig(...) failed:\n"
      "invalid usage ... Last NCCL warning(error): 'Bootstrap : no socket interface found'\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "no_socket_interface");
}

// misc/shmutils.cc's CUDA failure is the /dev/shm segment's (NVIDIA/nccl#1518).
TEST(CollectiveLogWording, DeviceRuntimeFailureInShmutilsIsTheShmSegment) {
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
TEST(CollectiveLogWording, BareNetMessageIsTheLibrarysOwnWords) {
  NcclLogSummary s = parse_nccl_log(
      "NET/IBP:Got completion from peer 7.6.13.83<36315> with status=12 opcode=32698 len=32696 "
      "vendor err 129 (Send)\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "transport_retry_exceeded");
  EXPECT_FALSE(s.network);
}

// Before 2.13 enqueue.cc returned ncclInternalError after "Error : no algorithm/protocol
// available" (NVIDIA/nccl#653, Slurm labels and an empty host column).
TEST(CollectiveLogWording, OldNoAlgorithmWordingIsAnInternalError) {
  NcclLogSummary s = parse_nccl_log(
      "201: :41367:41367 [1] enqueue.cc:422 NCCL WARN Error : no algorithm/protocol available\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_internal_error");
}

// nccl-tests of 2017-2018 wrote "Cuda failure common.cu:N 'x'" without "Test"
// (NVIDIA/nccl-tests#2).
TEST(CollectiveLogWording, OldCollectiveTestsDeviceRuntimeFailure) {
  NcclLogSummary s = parse_nccl_log(
      ">> nThread 1 nGpus 1 minBytes 33554432 maxBytes 134217728 step: 2(factor) warmup iters: 5 "
      "iters: 20 validation: 0\n"
      ">> Cuda failure common.cu:891 'invalid device ordinal'\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "cuda_error");
}

// bootstrap.cc's remote allocator thread failing a CUDA allocation (NVIDIA/nccl#844).
TEST(CollectiveLogWording, RemoteAllocatorFailureIsOutOfMemory) {
  NcclLogSummary s = parse_nccl_log(
      "696b7901f9044f23b786795c0ef7257b000000:39:298 [0] bootstrap.cc:279 NCCL WARN [Rem "
      "Allocator] Allocation failed (segment 0, fd 130)\n"
      "696b7901f9044f23b786795c0ef7257b000000:39:298 [0] include/alloc.h:48 NCCL WARN Cuda "
      "failure 'out of memory'\n"
      "696b7901f9044f23b786795c0ef7257b000000:39:298 [0] NCCL INFO bootstrap.cc:231 -> 1\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "out_of_memory");
}

// aws-ofi-nccl finding no provider: the plugin did not start, so it carried nothing
// (NVIDIA/nccl#229).
TEST(CollectiveLogWording, OfiPluginWithoutAProviderFailedToStart) {
  NcclLogSummary s = parse_nccl_log(
      "get_ofi_provider:312 NCCL WARN NET/OFI Could not find any optimal provider\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "plugin_init_failed");
  EXPECT_EQ(s.network.value_or("null"), "null");
}

// ncclGetErrorString's text as users type it: "unhanled system error" (pytorch/pytorch#23363),
// "unhandled CUDA error" (nccl-tests#280, a HIP/RCCL-era capitalisation).
TEST(CollectiveLogWording, ErrorStringsAreMatchedByTheirMeaningfulWords) {
  NcclLogSummary s = parse_nccl_log(
      "fail to new train...e= NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:272, "
      "unhanled system error\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_system_error");
  s = parse_nccl_log(
      "c2211f46f318: Test NCCL failure common.cu:1005 'unhandled CUDA error'\n"
      ".. c2211f46f318 pid 3288: Test failure common.cu:891\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "cuda_error");
  EXPECT_EQ(first_error(s).host, "c2211f46f318");
}

// Batch 11: NCCL's shared-memory text quoted without its prefix (WangRongsheng/XrayGLM#83).
TEST(CollectiveLogWording, ShmSegmentErrorWithoutTheLibraryPrefix) {
  NcclLogSummary s = parse_nccl_log(
      "Error while creating shared memory segment /dev/shm/nccl-CsYXMW (size 9637888)\n"
      "Traceback (most recent call last):\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "shm_exhausted");
}

// A SIGBUS in a process of an NCCL job, with no WARN: the /dev/shm segment NCCL mapped could not
// be backed (Docker's 64 MB /dev/shm) (NVIDIA/Megatron-LM#516).
TEST(CollectiveLogWording, BusErrorInACollectiveJobIsSharedMemory) {
  const std::string info =
      "09677202c889:5283:5699 [7] NCCL INFO 24 coll channels, 0 nvls channels, 32 p2p channels, "
      "32 p2p channels per peer\n";
  NcclLogSummary s =
      parse_nccl_log(info +
                     "[09677202c889:5283 :0:5704] Caught signal 7 (Bus error: nonexistent physical "
                     "address)\n"
                     "==== backtrace (tid:   5704) ====\n"
                     " 1 0x000000000008170d ncclGroupEnd()  ???:0\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "shm_exhausted");
  EXPECT_EQ(first_error(s).host, "09677202c889");
  // Another signal is not this.
  s = parse_nccl_log(info +
                     "[09677202c889:5283 :0:5704] Caught signal 11 (Segmentation fault: "
                     "address not mapped to object at address 0x8)\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "none");
}

// NCCL 1.x printed "WARN src/core.cu:N ..." and "INFO ..." with no host (NVIDIA/nccl#100,
// held-out batch 16): its lines are NCCL's (not "no NCCL INFO lines"), and the failed copy to the
// device with its illegal memory access is a CUDA error.
TEST(CollectiveLogWording, VersionOneCoreWarningsAreRead) {
  const NcclLogSummary s = parse_nccl_log(
      "INFO NCCL debug level set to INFO\n"
      "INFO rank 0 using buffSize = 2097152\n"
      "INFO rank access 0 -> 1 via zero-copy host mem\n"
      "WARN src/core.cu:487 rank 1 failed to copy maps to device\n"
      "WARN src/core.cu:327 Faild to clear dev map: an illegal memory access was encountered\n"
      "WARN src/core.cu:916 rank 1 failed to build comm maps\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "cuda_error");
  EXPECT_EQ(s.nccl_lines, 6);
  for (const auto& f : judge_nccl_log(s, std::nullopt)) EXPECT_NE(f.code, "nccl_log.no_nccl_info");
  ASSERT_FALSE(s.failures.empty());
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).line, 4);
  // A bare "INFO" opens other programs' lines too: vLLM's are not NCCL's.
  EXPECT_EQ(
      split_log_line("INFO 04-07 00:57:46 llm_engine.py:87] Initializing an LLM engine").source,
      LineSource::kOther);
}

// ncclGetErrorString's texts in an application's own check of an NCCL call (NVIDIA Caffe's
// "NCCL Init failed (%d) '%s'" and NCCLCHECK "NCCL failure %s:%d '%s'", matex-org/caffe-nvidia
// src/caffe/parallel/mpi_nccl_sync.cpp), with NCCL 1.x's texts ("cuda malloc failed").
TEST(CollectiveLogWording, LibraryResultTextsInAnApplicationsCheck) {
  EXPECT_EQ(
      parse_nccl_log("NCCL Init failed (10) 'cuda malloc failed'\n").cause_kind.value_or("none"),
      "out_of_memory");
  EXPECT_EQ(parse_nccl_log("NCCL failure ./XMatrix.cu:3600 'unhandled cuda error'\n")
                .cause_kind.value_or("none"),
            "cuda_error");
  EXPECT_EQ(parse_nccl_log("NCCL Init failed (2) 'system error'\n").cause_kind.value_or("none"),
            "nccl_system_error");
}

}  // namespace
}  // namespace fabkit::nccl_log
