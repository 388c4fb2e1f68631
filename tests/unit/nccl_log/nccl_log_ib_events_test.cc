// The RDMA NIC's asynchronous events and what they did to the queue pairs after them.
// Each test uses the real lines of a public thread's log (named beside it); the held-out batch it
// came in is in tests/fixtures/nccl_log/real/README.md.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "common/finding.h"
#include "fabric/nccl_log/nccl_log.h"
#include "fabric/nccl_log/nccl_log_classify.h"
#include "fabric/nccl_log/nccl_log_line.h"

namespace fabkit::nccl_log {
namespace {

// GitHub's auto-links in a pasted log, inside a Markdown quote (nccl#1710); the HCA event
// names IB and is the cause before the other host's completion error.
TEST(CollectiveLogIbEvents, MarkdownLinksAndAsyncEventNameIb) {
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

// A GID table change is NCCL's warning; completion errors that follow on that host make it the
// cause (NVIDIA/nccl#394); alone it is no failure.
TEST(CollectiveLogIbEvents, GidChangeBeforeCompletionErrorsIsTheirCause) {
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


// Client reregistration after init (DeepSpeedExamples#310, held-out batch 16): the subnet
// manager asked the ports to re-register; NCCL carries on. Reported with its count and as
// benign, in the summary, the JSON and the finding; no failure, and the IB transport named.
TEST(CollectiveLogIbEvents, ClientReregistrationIsReportedAsBenign) {
  const std::string log =
      "gpu1:5021:5376 [0] NCCL INFO comm 0x453b9880 rank 0 nranks 8 cudaDev 0 busId 4f000 - Init "
      "COMPLETE\n"
      "\n"
      "gpu1:5021:5386 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client "
      "reregistration\n"
      "\n"
      "gpu1:5023:5387 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client "
      "reregistration\n"
      "\n"
      "gpu1:5022:5382 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client "
      "reregistration\n";
  const NcclLogSummary s = parse_nccl_log(log);
  EXPECT_FALSE(s.cause_kind);
  EXPECT_EQ(s.network.value_or("null"), "IB");
  ASSERT_EQ(s.ib_events.size(), 1u);
  const NcclIbEvent& e = s.ib_events[0];
  EXPECT_EQ(e.event, "client reregistration");
  EXPECT_EQ(e.device, "");
  EXPECT_EQ(e.count, 3);
  EXPECT_TRUE(e.benign);
  EXPECT_EQ(e.first_line, 3);
  EXPECT_EQ(e.first_who, "rank 0 (gpu1)");  // its Init COMPLETE line named its rank
  const Json j = to_json(s);
  ASSERT_TRUE(j.contains("ib_events"));
  EXPECT_EQ(j["ib_events"][0]["event"], "client reregistration");
  EXPECT_EQ(j["ib_events"][0]["count"], 3);
  EXPECT_EQ(j["ib_events"][0]["benign"], true);
  EXPECT_TRUE(j["ib_events"][0]["device"].is_null());
  bool found = false;
  for (const Finding& f : judge_nccl_log(s, std::nullopt)) {
    if (f.code != "nccl_log.ib_async_events") continue;
    found = true;
    EXPECT_EQ(f.severity, Severity::kInfo);
    EXPECT_NE(f.message.find("client reregistration x3 (benign"), std::string::npos)
        << f.message;
  }
  EXPECT_TRUE(found);
  // Alone, without the INFO lines that make an unruled WARN no failure, still none.
  const NcclLogSummary alone = parse_nccl_log(
      "gpu1:1334:1679 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client "
      "reregistration\n");
  EXPECT_FALSE(alone.cause_kind);
}

// Port errors (lit-llama#380) and a queue pair's access violation on a named port (nccl#1710):
// counted per event and port, not benign, and the finding warns.
TEST(CollectiveLogIbEvents, ErrorEventsAreCountedPerPortAndNotBenign) {
  const NcclLogSummary s = parse_nccl_log(
      "...-48:34050:34121 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port "
      "error\n"
      "\n"
      "...-48:34052:34141 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port "
      "error\n"
      "> node201:127799:127863 [0] transport/[net_ib.cc:101](http://net_ib.cc:101/) NCCL WARN "
      "NET/IB : mlx5_0:1 Got async event : local access violation work queue error\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "ib_async_error");
  ASSERT_EQ(s.ib_events.size(), 2u);
  EXPECT_EQ(s.ib_events[0].event, "port error");
  EXPECT_EQ(s.ib_events[0].count, 2);
  EXPECT_FALSE(s.ib_events[0].benign);
  EXPECT_EQ(s.ib_events[1].event, "local access violation work queue error");
  EXPECT_EQ(s.ib_events[1].device, "mlx5_0:1");
  EXPECT_FALSE(s.ib_events[1].benign);
  bool warned = false;
  for (const Finding& f : judge_nccl_log(s, std::nullopt))
    warned |= f.code == "nccl_log.ib_async_events" && f.severity == Severity::kWarn;
  EXPECT_TRUE(warned);
}

// An address change (nccl#394's "GID table change") is reported as the benign event it is, also
// where the completion errors after it make it their cause.
TEST(CollectiveLogIbEvents, AddressChangeIsReportedBesideTheFailureItCaused) {
  const NcclLogSummary s = parse_nccl_log(
      "node01: VM-0-14-centos:106:196 [0] transport/net_ib.cc:73 NCCL WARN NET/IB : Got async "
      "event : GID table change\n"
      "node01: VM-0-14-centos:108:593 [0] transport/net_ib.cc:816 NCCL WARN NET/IB : Got "
      "completion with error 12, opcode 0, len 32633, vendor err 129\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "ib_async_error");
  ASSERT_EQ(s.ib_events.size(), 1u);
  EXPECT_EQ(s.ib_events[0].event, "GID table change");
  EXPECT_TRUE(s.ib_events[0].benign);
}

// NCCL's IB transport cannot find the PCI device behind a soft-RoCE port (rxe has no device/ in
// sysfs: tests/fixtures/rdma/sysfs_rxe_initial_netns.ttar) and says so, then uses rxe0 anyway
// (net_ib.cc ncclIbGetPciPath returns success): no failure. graph/xml.cc's real-path failure on
// a /sys path stays one (nccl#573).
TEST(CollectiveLogIbEvents, SoftRoceDeviceWithoutPciPathIsNoFailure) {
  const NcclLogSummary s = parse_nccl_log(
      "gpu-a1:4021:4087 [0] transport/net_ib.cc:154 NCCL WARN Could not find real path of rxe0 "
      "(/sys/class/infiniband/rxe0/device)\n"
      "gpu-a1:4021:4087 [0] NCCL INFO NET/IB : Using [0]rxe0:1/RoCE [RO]; OOB "
      "eth0:198.18.60.11<0>\n"
      "gpu-a1:4021:4087 [0] NCCL INFO Using network IB\n");
  EXPECT_FALSE(s.cause_kind);
  EXPECT_EQ(s.network.value_or("null"), "RoCE");
  const NcclLogSummary sysfs = parse_nccl_log(
      "bfclient02:14681:14750 [0] graph/xml.cc:332 NCCL WARN Could not find real path of "
      "/sys/class/pci_bus/0000:0d/../../0000:0d:00.0\n"
      "bfclient02:14681:14750 [0] NCCL INFO graph/xml.cc:648 -> 2\n");
  EXPECT_EQ(sysfs.cause_kind.value_or("none"), "nccl_system_error");
}

}  // namespace
}  // namespace fabkit::nccl_log
