// Every prefix style a job's log reaches people with, one test each: the launcher's, the
// container runtime's, the collector's and the viewer's text in front of NCCL's own line (and of
// PyTorch's glog lines). The NCCL and PyTorch lines are instantiated from their format strings;
// the prefixes are each tool's documented output format.
#include <gtest/gtest.h>

#include <string>

#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_log/nccl_log_classify.h"
#include "fabric/nccl_log/nccl_log_line.h"

namespace fabkit::nccl_log {
namespace {

const std::string kWarn =
    "gpu-a1:4021:4087 [3] misc/socket.cc:49 NCCL WARN socketProgressOpt: Call to recv from "
    "10.20.3.7<41852> failed : Connection reset by peer";
const std::string kWatchdog =
    "[rank5]:[E1126 10:11:12.123456789 ProcessGroupNCCL.cpp:616] [Rank 5] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
    "Timeout(ms)=600000) ran for 600042 milliseconds before timing out.";

// The NCCL line behind `prefix` is read whole: its host, device, source location and kind.
LogLine expect_nccl_line(const std::string& prefix) {
  LogLine l = split_log_line(prefix + kWarn);
  EXPECT_EQ(l.source, LineSource::kNcclWarn) << prefix;
  EXPECT_EQ(l.origin.host, "gpu-a1") << prefix;
  EXPECT_EQ(l.origin.pid, 4021) << prefix;
  EXPECT_EQ(l.origin.cuda_dev, 3) << prefix;
  EXPECT_EQ(l.nccl_file, "misc/socket.cc:49") << prefix;
  auto k = classify_message(l.msg, l.source, false);
  EXPECT_TRUE(k && k->kind == "peer_reset") << prefix;
  return l;
}

// PyTorch's glog line behind `prefix`: its rank, its glog time and its kind.
void expect_torch_line(const std::string& prefix) {
  LogLine l = split_log_line(prefix + kWatchdog);
  EXPECT_EQ(l.source, LineSource::kTorch) << prefix;
  EXPECT_EQ(l.origin.rank, 5) << prefix;
  auto k = classify_message(l.msg, l.source, false);
  EXPECT_TRUE(k && k->kind == "watchdog_timeout") << prefix;
}

TEST(NcclLogPrefix, Rfc3339WithNanosecondsAndZ) {  // docker logs -t, kubectl logs --timestamps
  LogLine l = expect_nccl_line("2025-11-24T03:20:21.001125857Z ");
  EXPECT_EQ(l.origin.time_format, TimeFormat::kAbsolute);
  EXPECT_NEAR(l.origin.time_s, 1763954421.001, 0.001);
  expect_torch_line("2025-11-24T03:20:21.001125857Z ");
}

TEST(NcclLogPrefix, IsoWithOffset) {
  LogLine l = expect_nccl_line("2025-11-24T05:20:21.5+02:00 ");
  EXPECT_DOUBLE_EQ(l.origin.time_s, 1763954421.5);
}

TEST(NcclLogPrefix, PythonLoggingCommaMilliseconds) {  // logging's default asctime
  LogLine l = expect_nccl_line("2025-11-24 03:20:21,250 ");
  EXPECT_DOUBLE_EQ(l.origin.time_s, 1763954421.25);
}

TEST(NcclLogPrefix, SlashDate) {  // Go's log package, many cluster agents
  LogLine l = expect_nccl_line("2025/11/24 03:20:21 ");
  EXPECT_EQ(l.origin.time_format, TimeFormat::kAbsolute);
  EXPECT_DOUBLE_EQ(l.origin.time_s, 1763954421);
}

TEST(NcclLogPrefix, BracketedDateTime) {
  LogLine l = expect_nccl_line("[2025-11-24 03:20:21] ");
  EXPECT_DOUBLE_EQ(l.origin.time_s, 1763954421);
}

TEST(NcclLogPrefix, BracketedTimeOfDay) { expect_nccl_line("[03:20:21.532] "); }

TEST(NcclLogPrefix, CtimeBeforeOpenMpiTag) {  // mpirun --timestamp-output --tag-output
  LogLine l = expect_nccl_line("Mon Nov 24 03:20:21 2025[1,6]<stdout>:");
  EXPECT_DOUBLE_EQ(l.origin.time_s, 1763954421);
  EXPECT_EQ(l.origin.rank, 6);
}

TEST(NcclLogPrefix, JournaldShort) {  // journalctl's default "Mon DD HH:MM:SS host tag[pid]: "
  LogLine l = expect_nccl_line("Nov 24 03:20:21 gpu-a1 python3[4021]: ");
  EXPECT_EQ(l.origin.time_format, TimeFormat::kGlogNoYear);
  LogLine later = split_log_line("Nov 24 03:20:22 gpu-a1 python3[4021]: " + kWarn);
  EXPECT_DOUBLE_EQ(later.origin.time_s - l.origin.time_s, 1);
  expect_torch_line("Nov 24 03:20:21 gpu-a1 python3[4021]: ");
}

TEST(NcclLogPrefix, JournaldShortIso) {  // journalctl -o short-iso
  LogLine l = expect_nccl_line("2025-11-24T03:20:21+0000 gpu-a1 python3[4021]: ");
  EXPECT_DOUBLE_EQ(l.origin.time_s, 1763954421);
}

TEST(NcclLogPrefix, TorchrunRankTag) {
  EXPECT_EQ(expect_nccl_line("[rank13]:").origin.rank, 13);
  expect_torch_line("[default5]:");
}

TEST(NcclLogPrefix, OpenMpiTagOutput) {
  EXPECT_EQ(expect_nccl_line("[1,3]<stdout>:").origin.rank, 3);
  EXPECT_EQ(expect_nccl_line("[1,3]<stderr>:").origin.rank, 3);
}

TEST(NcclLogPrefix, SrunLabel) {  // srun --label, padded for wide jobs
  EXPECT_EQ(expect_nccl_line("12: ").origin.rank, 12);
  EXPECT_EQ(expect_nccl_line(" 7: ").origin.rank, 7);
}

TEST(NcclLogPrefix, PdshHost) { expect_nccl_line("10.0.87.143: 10.0.87.143: "); }

TEST(NcclLogPrefix, CloudWatchTableColumns) {
  LogLine l = expect_nccl_line("|  | 2024-11-28T07:42:11.525Z | ");
  EXPECT_EQ(l.origin.time_format, TimeFormat::kAbsolute);
}

TEST(NcclLogPrefix, KubectlPrefixAndTimestamps) {  // kubectl logs --prefix --timestamps
  LogLine l = expect_nccl_line("[pod/trainer-worker-0/pytorch] 2025-11-24T03:20:21.5Z ");
  EXPECT_EQ(l.origin.label, "trainer-worker-0/pytorch");
  EXPECT_DOUBLE_EQ(l.origin.time_s, 1763954421.5);
}

TEST(NcclLogPrefix, RayWorkerTagWithIp) {
  expect_nccl_line("(RayWorkerWrapper pid=4021, ip=10.20.3.5) ");
  expect_nccl_line("(pid=4021, ip=10.20.3.5) ");
  expect_nccl_line("\x1b[36m(RayTrainWorker pid=4021, ip=10.20.3.5)\x1b[0m ");
  expect_torch_line("(RayWorkerWrapper pid=4021, ip=10.20.3.5) ");
}

TEST(NcclLogPrefix, DockerComposeService) {
  LogLine l = expect_nccl_line("trainer-1  | ");
  EXPECT_EQ(l.origin.label, "trainer-1");
  expect_torch_line("trainer-1  | ");
}

TEST(NcclLogPrefix, MarkdownQuote) {  // a log pasted as a GitHub quote, nested or not
  expect_nccl_line("> ");
  expect_nccl_line("> > ");
  expect_nccl_line(">> ");
  expect_torch_line("> ");
}

TEST(NcclLogPrefix, AnsiColours) { expect_nccl_line("\x1b[0m\x1b[1;31m"); }

TEST(NcclLogPrefix, StackedPrefixes) {  // collector time, compose service, srun label
  LogLine l = expect_nccl_line("2025-11-24T03:20:21Z trainer-1  | 3: ");
  EXPECT_EQ(l.origin.rank, 3);
  EXPECT_DOUBLE_EQ(l.origin.time_s, 1763954421);
}

// The prefixes must not eat the text of lines that are no prefix at all.
TEST(NcclLogPrefix, OrdinaryTextIsNotAPrefix) {
  EXPECT_EQ(split_log_line("RuntimeError: NCCL error in: x.cpp:1, unhandled system error").msg,
            "RuntimeError: NCCL error in: x.cpp:1, unhandled system error");
  EXPECT_EQ(split_log_line("threadThresholds 8/8/64 | 16/8/64").msg,
            "threadThresholds 8/8/64 | 16/8/64");
  EXPECT_EQ(split_log_line("[03:20 is not a time]").msg, "[03:20 is not a time]");
}

}  // namespace
}  // namespace fabkit::nccl_log
