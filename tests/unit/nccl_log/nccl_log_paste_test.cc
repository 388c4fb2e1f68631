// Logs as people paste them: rank tags in the text, terminal rows joined or padded, Markdown
// emphasis, lines run together, and who said it first behind each. Each test uses the real lines of
// a public thread's log (named beside it); the held-out batch it came in is in
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

// PyTorch's rank tags inside the text (sglang#1693, nccl#1684), and an exception's class is no
// pdsh host (ray_lightning#24).
TEST(CollectiveLogPaste, RankTagsAndExceptionNames) {
  const auto first_rank = [](const std::string& text) -> std::optional<int> {
    const NcclLogSummary s = parse_nccl_log(text);
    if (s.failures.empty()) return std::nullopt;
    return s.errors.at(s.failures[0].first_error).rank;
  };
  EXPECT_EQ(first_rank("  what():  [PG 3 Rank 5] Process group watchdog thread terminated with "
                       "exception: [Rank 5] Watchdog caught collective operation timeout: "
                       "WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, NumelIn=19008, "
                       "NumelOut=152064, Timeout(ms)=600000) ran for 600020 milliseconds before "
                       "timing out.\n"),
            5);
  EXPECT_EQ(first_rank(" rank0]:[E416 04:50:37.808620443 ProcessGroupNCCL.cpp:1484] [PG ID 2 PG "
                       "GUID 3 Rank 0] ProcessGroupNCCL's watchdog got stuck for 300 seconds "
                       "without making progress in monitoring enqueued collectives.\n"),
            0);
  const LogLine ex = split_log_line(
      "(pid=909597) RuntimeError: NCCL error in: "
      "/opt/conda/conda-bld/pytorch_1603729062494/work/torch/lib/c10d/ProcessGroupNCCL.cpp:784, "
      "unhandled cuda error, NCCL version 2.7.8");
  EXPECT_EQ(ex.origin.host, "");
  auto c = classify_message(ex.msg, ex.source, false);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, "cuda_error");
}

// A terminal paste joined the screen's rows, each padded with spaces (deepseek-ai/DeepEP#106).
TEST(CollectiveLogPaste, PaddedRowsOfATerminalPasteAreReadApart) {
  const std::string pad(150, ' ');
  NcclLogSummary s = parse_nccl_log(
      "tos:11978:12642 [0] ib_plugin.c:1075 NCCL WARN NET/IB : Got completion from peer "
      "172.21.17.89<38536> with error 5, opcode 48, len 32710, vendor err 249" +
      pad + "VM-17-82-centos:11978:12642 [0] NCCL INFO transport/net.cc:1125 -> 6" + pad + "\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "work_request_flushed");
  EXPECT_EQ(s.network.value_or("null"), "IB");
  // Short runs of spaces (aligned columns) do not split a line.
  s = parse_nccl_log(
      "h:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with "
      "error 12,          opcode 0, len 0, vendor err 129\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "transport_retry_exceeded");
}

// Who said it first, in three line shapes of batches 7 and 9: a block pasted between backticks
// keeps its first line's host (NVIDIA/nccl#1814, aws-ofi-nccl#156), horovodrun's "[1]<stderr>:"
// names rank 1 (pytorch/ignite#3466), and a host named after its address is no date
// (pytorch/pytorch#124380).
TEST(CollectiveLogPaste, FirstSayerThroughBackticksHorovodTagsAndAddressHostnames) {
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

// Batch 11: who said it first behind Ray's and vLLM's worker prefixes (OpenRLHF/OpenRLHF#265,
// gpustack/gpustack#2680), a proxy service's rank (mosaicml/diffusion#110) and a host the poster
// masked (sgl-project/sglang#4857).
TEST(CollectiveLogPaste, FirstSayerBehindWorkerPrefixesProxyRanksAndMaskedHosts) {
  NcclLogSummary s = parse_nccl_log(
      "(VllmWorker rank=3 pid=4665) ERROR 08-05 14:13:44 [multiproc_executor.py:487] "
      "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_system_error");
  EXPECT_EQ(first_error(s).rank, 3);
  s = parse_nccl_log(
      "(RayWorkerVllm pid=207931, ip=10.0.1.75) [E socket.cpp:922] [c10d] The client socket has "
      "timed out after 1800s while trying to connect to (172.17.0.2, 44737).\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "bootstrap_failed");
  EXPECT_EQ(first_error(s).host, "10.0.1.75");
  s = parse_nccl_log(
      "> -:6015:6225 [1] proxy.cc:1119 NCCL WARN [Proxy Service 1] Failed to execute operation "
      "Connect from rank 1, retcode 6\n"
      "> -:6015:6224 [1] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer "
      "draw4<59227>\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "peer_closed");
  EXPECT_EQ(first_error(s).rank, 1);
  EXPECT_EQ(first_error(s).peer, "draw4<59227>");
  s = parse_nccl_log(
      "[Node-A]:[PID]:[Thread] [0] NCCL WARN NET/IB : Got completion from peer [PRIVATE_IP] with "
      "error 12, opcode 0, len 0, vendor err 129 (Recv)\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "transport_retry_exceeded");
  EXPECT_EQ(first_error(s).host, "[Node-A]");
}

// Batch 12: a WARN pasted with Markdown italics and bold and a doubled space
// (pytorch/pytorch#17703).
TEST(CollectiveLogPaste, MarkdownEmphasisAndDoubledSpaces) {
  NcclLogSummary s = parse_nccl_log(
      "_worker0-0d9gnb:15:91 [3] include/socket.h 398 NCCL WARN Call to **write** failed : "
      "Connection reset  by peer.\n"
      "worker0-0d9gnb:15:91 [3] transport.cu:153 NCCL WARN transport.cu:153 ->2 [Proxy thread "
      "error]_\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "peer_reset");
  EXPECT_EQ(first_error(s).host, "worker0-0d9gnb");
}

// Batch 15: an error line and the next NCCL line joined by a paste that lost its newlines
// (vllm-project/vllm#21661), and Paddle's "Nccl error" (PaddlePaddle/PaddleClas#330).
TEST(CollectiveLogPaste, ErrorJoinedToALibraryLineAndPaddlesCollectiveError) {
  NcclLogSummary s = parse_nccl_log(
      "ERROR 11-04 18:02:56 [v1/executor/multiproc_executor.py:597] RuntimeError: NCCL error: "
      "unhandled cuda error (run with NCCL_DEBUG=INFO for details) 02fdc141b80d:213:213 [1] NCCL "
      "INFO cudaDriverVersion 12080\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "cuda_error");
  EXPECT_EQ(s.nccl_lines, 1);
  s = parse_nccl_log(
      "ExternalError:  Nccl error, unhandled cuda error  (at "
      "/paddle/paddle/fluid/platform/collective_helper.cc:83)\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "cuda_error");
  // A launcher's prefix before NCCL's is not split off.
  s = parse_nccl_log("[rank3]: gpu1:10:11 [3] NCCL INFO Using network IB\n");
  EXPECT_EQ(s.ranks.at(0).rank, 3);
}

// Batches 14 and 15: who said it first: the watchdog's what() line names the rank its frames do
// not (NVIDIA/Megatron-LM#935); pdsh's "node2: " before an exception's "Last error:"
// (EleutherAI/gpt-neox#1147).
TEST(CollectiveLogPaste, FirstSayerAfterNamelessFramesAndBeforeLastError) {
  NcclLogSummary s = parse_nccl_log(
      "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::"
      "duration<long, std::ratio<1l, 1000l> > >) + 0x1e1 (0x7fe705ea04e1 in /usr/local/lib/"
      "python3.10/dist-packages/torch/lib/libtorch_cuda.so)\n"
      "terminate called after throwing an instance of 'c10::DistBackendError'\n"
      "  what():  [PG 1 Rank 1] Process group watchdog thread terminated with exception: [Rank 1] "
      "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=199, "
      "OpType=_REDUCE_SCATTER_BASE, NumelIn=7098994688, NumelOut=443687168, Timeout(ms)=600000) "
      "ra\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "watchdog_timeout");
  EXPECT_EQ(first_error(s).rank, 1);
  s = parse_nccl_log(
      "NCCL error in: ProcessGroupNCCL.cpp:1269, internal error, NCCL version 2.14.3\n"
      "node2: Last error:\n"
      "node2: Net : Call to recv from NODE2_IP<56843> failed : Connection refused\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "connect_failed");
  EXPECT_EQ(first_error(s).host, "node2");
}

}  // namespace
}  // namespace fabkit::nccl_log
