// The network a log shows when the usual lines are cut or decorated: Ray's repeat suffix, a plugin's API
// version in its name, NCCL 2.3's bootstrap over sockets.
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

// Ray's deduplication suffix is Ray's words, not part of the network's name
// (awslabs/awsome-distributed-ai#386).
TEST(CollectiveLogNetwork, RayRepeatSuffixIsNotPartOfTheNetwork) {
  const std::string ray = "(RayTrainWorker pid=954, ip=10.67.132.202) ";
  NcclLogSummary s = parse_nccl_log(
      ray +
      "ini-worker-ray-worker-p5:954:3133 [6] nccl_net_ofi_create_plugin:1067 NCCL WARN NET/OFI "
      "aws-ofi-nccl initialization failed [repeated 15x across cluster]\n" +
      ray +
      "ini-worker-ray-worker-p5:954:3133 [6] NCCL INFO NET/Socket : Using "
      "[0]eth0:10.67.132.202<0> [repeated 15x across cluster]\n" +
      ray +
      "ini-worker-ray-worker-p5:954:3133 [6] NCCL INFO Using network Socket [repeated 15x "
      "across cluster]\n");
  EXPECT_EQ(s.network.value_or("null"), "Socket");
  EXPECT_EQ(s.cause_kind.value_or("none"), "plugin_init_failed");
}

// Batch 11: a net plugin's name carries its API version ("IBext_v8"): the network is IBext
// (sgl-project/sglang#6017).
TEST(CollectiveLogNetwork, PluginNetworkNameWithoutItsApiVersion) {
  NcclLogSummary s = parse_nccl_log(
      "hd03-gpu2-0031:14135:14135 [2] NCCL INFO Using non-device net plugin version 0\n"
      "hd03-gpu2-0031:14135:14135 [2] NCCL INFO Using network IBext_v8\n");
  EXPECT_EQ(s.network.value_or("null"), "IBext");
}

// Batch 13: an old bootstrap's trace through the socket transport ("transport/net_socket.cu:101
// -> 2" then "bootstrap.cu:76 -> 2 [bthread]"): NCCL 2.3 bootstrapped over sockets whatever the
// network, so that trace names no data network (PaddlePaddle/Paddle#10499); 2.1's bootstrap
// through net_ib.cu does (horovod#210, batch 5).
TEST(CollectiveLogNetwork, OldBootstrapTraceThroughNetSocketIsNotTheNetwork) {
  NcclLogSummary s = parse_nccl_log(
      "instance-fjhn02ur:454:484 [0] include/socket.h:185 WARN Call to connect failed : "
      "Connection refused\n"
      "instance-fjhn02ur:454:484 [0] INFO transport/net_socket.cu:101 -> 2\n"
      "instance-fjhn02ur:454:484 [0] INFO include/net.h:28 -> 2 [Net]\n"
      "instance-fjhn02ur:454:484 [0] INFO bootstrap.cu:76 -> 2 [bthread]\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "connect_failed");
  EXPECT_EQ(s.network.value_or("null"), "null");
  // A transfer's trace through net_socket still names it.
  s = parse_nccl_log(
      "h:1:2 [0] include/socket.h:185 WARN Call to recv failed : Connection reset by peer\n"
      "h:1:2 [0] INFO transport/net_socket.cu:149 -> 2\n"
      "h:1:2 [0] INFO transport/net.cu:300 -> 2\n");
  EXPECT_EQ(s.network.value_or("null"), "Socket");
}

}  // namespace
}  // namespace fabkit::nccl_log
