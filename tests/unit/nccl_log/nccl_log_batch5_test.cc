// Rules added after held-out batch 5 (tests/fixtures/nccl_log/real/README.md): each test uses
// the real lines of the log whose miss it answers (the thread is named at each test).
#include <gtest/gtest.h>

#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_log/nccl_log_classify.h"
#include "fabric/nccl_log/nccl_log_line.h"

namespace fabkit::nccl_log {
namespace {

std::string kind_of(const std::string& line) {
  const LogLine l = split_log_line(line);
  auto c = classify_message(l.msg, l.source, false);
  return c ? c->kind : "none";
}

// NCCL's wordings that had no rule: the HCA's asynchronous events (nccl#230, lit-llama#380,
// nccl#1710, nccl#1905), the rings' consistency check (nccl#879, nccl#520) and the bootstrap
// root refusing a second check-in (Lightning#14986).
TEST(NcclLogBatch5, WordingsOfOtherVersions) {
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

// A failed connect is a connect failure whatever reason it gives (nccl#963); a reset on an
// established connection stays a reset.
TEST(NcclLogBatch5, FailedConnectWhateverTheReason) {
  EXPECT_EQ(kind_of("9306dc444753:248281:248336 [3] misc/socket.cc:456 NCCL WARN Net : Connect to "
                    "172.17.0.2<40537> failed : Connection reset by peer"),
            "connect_failed");
  EXPECT_EQ(kind_of("9306dc444753:248281:248334 [2] misc/socket.cc:518 NCCL WARN Net : Call to "
                    "recv from 172.17.0.2<40537> failed : Connection reset by peer"),
            "peer_reset");
}

// PyTorch's rank tags inside the text (sglang#1693, nccl#1684), and an exception's class is no
// pdsh host (ray_lightning#24).
TEST(NcclLogBatch5, RankTagsAndExceptionNames) {
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

// A terminal that hard-wrapped PyTorch's glog line mid-word (VLM-R1#257).
TEST(NcclLogBatch5, WrappedGlogLineIsJoined) {
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

// GitHub's auto-links in a pasted log, inside a Markdown quote (nccl#1710); the HCA event
// names IB and is the cause before the other host's completion error.
TEST(NcclLogBatch5, MarkdownLinksAndAsyncEventNameIb) {
  const NcclLogSummary s = parse_nccl_log(
      "> node201:127799:127863 [0] transport/[net_ib.cc:101](http://net_ib.cc:101/) NCCL WARN "
      "NET/IB : mlx5_0:1 Got async event : local access violation work queue error\n"
      "> \n"
      "> node023:10214:10303 [0] transport/[net_ib.cc:1909](http://net_ib.cc:1909/) NCCL WARN "
      "NET/IB : Got completion from peer [10.1.3.201](http://10.1.3.201/)<33057> with status=9 "
      "opcode=0 len=0 vendor err 138 (Send) localGid ::ffff:[10.206.1.23](http://10.206.1.23/) "
      "remoteGids::ffff:[10.206.1.11](http://10.206.1.11/)\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "ib_async_error");
  EXPECT_EQ(s.network.value_or("null"), "IB");
  ASSERT_EQ(s.failures.size(), 2u);
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).host, "node201");
  const NcclLogError& second = s.errors.at(s.failures[1].first_error);
  EXPECT_EQ(second.host, "node023");
  EXPECT_EQ(second.peer, "10.1.3.201<33057>");
}

// A WARN without a rule, from a process that logged INFO lines but no error trace ("-> N"),
// is one NCCL carried on from; a net plugin's own NET/<name> lines name its network
// (nccl-fastsocket#4). With a trace after it it is a failure of the kind its return code names
// (batch 6); without INFO lines it stays a failure.
TEST(NcclLogBatch5, WarningWithoutErrorTraceIsNoFailure) {
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

}  // namespace
}  // namespace fabkit::nccl_log
