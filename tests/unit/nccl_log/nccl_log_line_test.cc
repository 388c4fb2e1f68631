// The line splitter and multi-rank input: launcher and collector prefixes in front of NCCL's
// own, PyTorch's glog lines, and the first failure across several files. The NCCL lines are real
// (from the corpus); the prefixes are the launchers' documented formats put in front of them.
#include <gtest/gtest.h>

#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_log/nccl_log_classify.h"
#include "fabric/nccl_log/nccl_log_line.h"

namespace fabkit::nccl_log {
namespace {

const char* kReset =
    "gpu-server320:7:9 [5] misc/socket.cc:46 NCCL WARN socketProgressOpt: Call to send to "
    "10.44.137.149<52905> failed : Connection reset by peer";

TEST(NcclLogLine, NcclPrefix) {
  LogLine l = split_log_line(kReset);
  EXPECT_EQ(l.source, LineSource::kNcclWarn);
  EXPECT_EQ(l.origin.host, "gpu-server320");
  EXPECT_EQ(l.origin.pid, 7);
  EXPECT_EQ(l.origin.cuda_dev, 5);
  EXPECT_EQ(l.nccl_file, "misc/socket.cc:46");
  EXPECT_EQ(l.msg.substr(0, 18), "socketProgressOpt:");
}

TEST(NcclLogLine, LauncherPrefixes) {
  struct Case {
    std::string prefix;
    std::optional<int> rank;
  };
  for (const Case& c :
       std::vector<Case>{{"[rank13]:", 13},
                         {"[1,3]<stdout>:", 3},
                         {"[1,3]<stderr>:", 3},
                         {"12: ", 12},
                         {"[56] ", 56},
                         {"[80746] [rank0]:", 0},
                         {"2025-11-24T03:20:21.001125857Z ", std::nullopt},
                         {"  | 2024-11-28T07:42:11.525Z | ", std::nullopt},
                         {"\x1b[0m ", std::nullopt},
                         {"[0m ", std::nullopt},
                         {"10.0.87.143: 10.0.87.143: ", std::nullopt},
                         {"[trainer3]:", std::nullopt},
                         // Open MPI --timestamp-output (nccl#957)
                         {"Fri Aug 11 12:31:45 2023[1,0]<stdout>:", 0},
                         // Ray's worker tag and time (nccl#1283)
                         {"(train_rft pid=2657296) 2024-05-11 14:10:52.227 ", std::nullopt},
                         // NeMo-Run role, torchrun tag (NeMo Speech#14399)
                         {"B-nemo-ft3/0 [default1]:[rank1]:", 1},
                         // Ray's tag without an actor name (ray_lightning#24)
                         {"(pid=909608) ", std::nullopt},
                         // a log pasted as a Markdown quote (nccl#1710)
                         {"> ", std::nullopt},
                         // a collector's "time: " before Open MPI's tag (nccl#230)
                         {"2019-06-02T16:13:44.884Z: [1,12]<stdout>:", 12},
                         // a log viewer's column before NCCL's prefix (nccl#879)
                         {"pytorch ", std::nullopt}}) {
    LogLine l = split_log_line(c.prefix + kReset);
    EXPECT_EQ(l.source, LineSource::kNcclWarn) << c.prefix;
    EXPECT_EQ(l.origin.host, "gpu-server320") << c.prefix;
    EXPECT_EQ(l.origin.rank, c.rank) << c.prefix;
    auto k = classify_message(l.msg, l.source, false);
    ASSERT_TRUE(k) << c.prefix;
    EXPECT_EQ(k->kind, "peer_reset") << c.prefix;
    EXPECT_EQ(k->peer, "10.44.137.149<52905>") << c.prefix;
  }
  EXPECT_EQ(split_log_line(std::string("[trainer3]:") + kReset).origin.label, "trainer3");
}

// NCCL 2.2-2.3's "file:line WARN msg" as quoted without its host (horovod#147, nccl#210), and a
// host whose pid and tid a poster masked (nccl#2013).
TEST(NcclLogLine, OldWarnWithoutHostAndMaskedPid) {
  LogLine old = split_log_line(
      "transport/net_ib.cu:781 WARN NET/IB : Got completion with error 12, opcode 1, len0, "
      "vendor err 129");
  EXPECT_EQ(old.source, LineSource::kNcclWarn);
  EXPECT_EQ(old.nccl_file, "transport/net_ib.cu:781");
  EXPECT_EQ(old.origin.host, "");
  auto k = classify_message(old.msg, old.source, false);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "transport_retry_exceeded");
  LogLine family = split_log_line(
      "include/socket.h:344 WARN Socket creation failed : Address family not supported by "
      "protocol");
  k = classify_message(family.msg, family.source, false);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "no_socket_interface");
  // Prose with " WARN " in it is not an NCCL line.
  EXPECT_EQ(split_log_line("the job: WARN about this").source, LineSource::kOther);
  LogLine masked = split_log_line(
      "host-01.example.com:XXXXXX [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed");
  EXPECT_EQ(masked.origin.host, "host-01.example.com");
  EXPECT_EQ(masked.origin.cuda_dev, 5);
}

TEST(NcclLogLine, TimesAreRead) {
  LogLine iso = split_log_line(std::string("2025-11-24T03:20:21.5Z ") + kReset);
  EXPECT_EQ(iso.origin.time_format, TimeFormat::kAbsolute);
  EXPECT_DOUBLE_EQ(iso.origin.time_s, 1763954421.5);
  LogLine offset = split_log_line(std::string("2025-11-24T05:20:21.5+02:00 ") + kReset);
  EXPECT_DOUBLE_EQ(offset.origin.time_s, iso.origin.time_s);
  LogLine ctime = split_log_line(std::string("Mon Nov 24 03:20:21 2025[1,0]<stdout>:") + kReset);
  EXPECT_EQ(ctime.origin.time_format, TimeFormat::kAbsolute);
  EXPECT_DOUBLE_EQ(ctime.origin.time_s, 1763954421);
  LogLine glog = split_log_line(
      "[rank4]:[E1206 18:44:12.755262105 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, "
      "NumelIn=544997376, NumelOut=68124672, Timeout(ms)=600000) ran for 600099 milliseconds "
      "before timing out.");
  EXPECT_EQ(glog.source, LineSource::kTorch);
  EXPECT_EQ(glog.origin.rank, 4);
  EXPECT_EQ(glog.origin.time_format, TimeFormat::kGlogNoYear);
  auto k = classify_message(glog.msg, glog.source, false);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "watchdog_timeout");
  EXPECT_EQ(k->detail,
            "WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, "
            "NumelOut=68124672, Timeout(ms)=600000)");
}

TEST(NcclLogLine, BenignPluginProbingIsNoError) {
  for (const char* m :
       {"NET/Plugin: Failed to find ncclNetPlugin_v6 symbol.",
        "NET/Plugin: Failed to find ncclNetPlugin symbol (>= v5). ncclNetPlugin "
        "symbols v4 and lower are not supported.",
        "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation",
        "TUNER/Plugin: Failed to find ncclTunerPlugin_v2, using internal tuner instead."})
    EXPECT_FALSE(classify_message(m, LineSource::kNcclInfo, false)) << m;
}

// aws-ofi-nccl over libfabric's TCP provider is the plugin's network running on TCP, not NCCL's
// socket transport: the network stays the plugin's and a warning says what it rides on. (The
// line is in the plugin's INFO format, as in tests/fixtures/nccl_log/real/heldout_aws_ofi_22_*;
// no public log with this provider was found.)
TEST(NcclLogLine, OfiOverTcpIsThePluginNotTheSocketTransport) {
  NcclLogSummary s = parse_nccl_log(
      "algo-1:462:462 [0] NCCL INFO NET/OFI Using aws-ofi-nccl 1.3.0aws\n"
      "algo-1:462:462 [0] NCCL INFO NET/OFI Selected Provider is tcp;ofi_rxm\n"
      "algo-1:462:462 [0] NCCL INFO Using network AWS Libfabric\n");
  EXPECT_EQ(s.network.value_or(""), "AWS Libfabric");
  EXPECT_EQ(s.ofi_provider.value_or(""), "tcp;ofi_rxm");
  bool warned = false;
  for (const auto& f : judge_nccl_log(s, std::nullopt)) {
    EXPECT_NE(f.code, "nccl_log.socket_only");
    warned = warned || f.code == "nccl_log.ofi_tcp_provider";
  }
  EXPECT_TRUE(warned);
}

TEST(NcclLogLine, TraceReturnCode) {
  EXPECT_EQ(trace_return_code("misc/socket.cc:564 -> 2"), 2);
  EXPECT_EQ(trace_return_code("bootstrap.cc:868 -> 6 ncclSocketConnect()"), 6);
  EXPECT_EQ(trace_return_code("Channel 00 : 0[0] -> 1[0] via NET/IB/0"), 0);
  EXPECT_EQ(trace_return_code("Tree 0 : -1 -> 0 -> 1/-1/-1"), 0);
}

// Two files of one job, without times: the order given decides among causes of one tier, and a
// root failure in the second file still beats a consequence in the first.
TEST(NcclLogMulti, RootFailureInAnyFileIsTheCause) {
  const std::string rank0 =
      "node0:10:11 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote "
      "peer node1<57557>\n";
  const std::string rank1 =
      "node1:20:21 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n";
  NcclLogSummary s = parse_nccl_logs({{"rank0.log", rank0}, {"rank1.log", rank1}});
  EXPECT_EQ(s.cause_kind.value_or(""), "out_of_memory");
  ASSERT_EQ(s.failures.size(), 2u);
  EXPECT_EQ(s.failures[0].role, "cause");
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).source, "rank1.log");
  EXPECT_EQ(s.failures[1].role, "consequence");
  EXPECT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.sources, (std::vector<std::string>{"rank0.log", "rank1.log"}));
}

// With times on every line, the earliest error across files is the cause, whatever the order
// the files were given in.
TEST(NcclLogMulti, TimesDecideAcrossFiles) {
  const std::string late =
      "2025-02-16T22:31:40Z h2:1:1 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect "
      "to 10.0.0.2<45763> failed : Software caused connection abort\n";
  const std::string early =
      "2025-02-16T22:31:34Z h1:1:1 [0] misc/ibvwrap.cc:268 NCCL WARN Call to ibv_create_cq "
      "failed\n";
  NcclLogSummary s = parse_nccl_logs({{"a.log", late}, {"b.log", early}});
  EXPECT_TRUE(s.order_by_time);
  EXPECT_EQ(s.cause_kind.value_or(""), "cq_create_failed");
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).host, "h1");
}

// A Slurm-labelled (srun --label) interleaving of two ranks: each rank gets its own view.
TEST(NcclLogMulti, InterleavedRanksOfOneFile) {
  const std::string text =
      "0: node0:10:11 [0] NCCL INFO Using network IB\n"
      "1: node1:20:21 [0] NCCL INFO Using network IB\n"
      "1: node1:20:21 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
      "10.0.0.1<53249> with error 12, opcode 1, len 0, vendor err 129 (Send)\n"
      "0: node0:10:11 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
      "10.0.0.2<44413> with error 5, opcode 1, len 0, vendor err 249 (Recv)\n";
  NcclLogSummary s = parse_nccl_log(text);
  EXPECT_EQ(s.cause_kind.value_or(""), "transport_retry_exceeded");
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[0].rank, 0);
  EXPECT_EQ(s.ranks[1].rank, 1);
  EXPECT_EQ(s.ranks[1].first_error_kind.value_or(""), "transport_retry_exceeded");
  EXPECT_EQ(s.ranks[0].network.value_or(""), "IB");
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).who, "rank 1 (node1)");
}

}  // namespace
}  // namespace fabkit::nccl_log
