// The RDMA NIC's asynchronous events and what they did to the queue pairs after them.
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

}  // namespace
}  // namespace fabkit::nccl_log
