// TCP between NCCL's processes and c10d's store: failed connects (whatever reason they give),
// connect retries that end the log, a store that never completes, stray connections, the bootstrap.
// Each test uses the real lines of a public thread's log (named beside it); the held-out batch it
// came in is in tests/fixtures/nccl_log/real/README.md.
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

// A failed connect is a connect failure whatever reason it gives (nccl#963); a reset on an
// established connection stays a reset.
TEST(CollectiveLogSocketErrors, FailedConnectWhateverTheReason) {
  EXPECT_EQ(kind_of("9306dc444753:248281:248336 [3] misc/socket.cc:456 NCCL WARN Net : Connect to "
                    "172.17.0.2<40537> failed : Connection reset by peer"),
            "connect_failed");
  EXPECT_EQ(kind_of("9306dc444753:248281:248334 [2] misc/socket.cc:518 NCCL WARN Net : Call to "
                    "recv from 172.17.0.2<40537> failed : Connection reset by peer"),
            "peer_reset");
}

// NCCL 2.19+ logs each connect retry at INFO; the last one is the failed connect even when the
// WARN after it was not pasted (hiyouga/LlamaFactory#8045). Earlier retries are no failure.
TEST(CollectiveLogSocketErrors, TheLastConnectRetryIsAConnectFailure) {
  const std::string retry =
      "zgiot:1183664:1184669 [0] NCCL INFO socketPollConnect: connect returned No route to host, "
      "retrying (";
  NcclLogSummary s = parse_nccl_log(retry + "33/34) after sleep for 3300 msec\n" + retry +
                                    "34/34) after sleep for 3400 msec\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "connect_failed");
  ASSERT_FALSE(s.failures.empty());
  EXPECT_EQ(s.errors.at(s.failures[0].first_error).host, "zgiot");
  s = parse_nccl_log(retry + "3/34) after sleep for 300 msec\n" +
                     "zgiot:1183664:1184669 [0] NCCL INFO Connected all rings\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "none");
}

// A process whose last lines are connect retries had not connected when the log ends
// (NVIDIA/nccl#948: 2.14's "Call to connect returned Connection refused, retrying").
TEST(CollectiveLogSocketErrors, ConnectRetriesThatEndTheLogAreAFailedConnect) {
  const std::string head =
      "lrdn1629:236813:236852 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB "
      "[RO]; OOB ib0:10.128.31.149<0>\n"
      "lrdn1629:236813:236852 [1] NCCL INFO Using network IB\n";
  const std::string retry =
      "lrdn1629:236813:236852 [1] NCCL INFO Call to connect returned Connection refused, "
      "retrying\n";
  NcclLogSummary s = parse_nccl_log(head + retry + retry + "....\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "connect_failed");
  EXPECT_EQ(s.network.value_or("null"), "IB");
  EXPECT_EQ(first_error(s).host, "lrdn1629");
  // Retries the process went on from are no failure.
  s = parse_nccl_log(head + retry + retry +
                     "lrdn1629:236813:236852 [1] NCCL INFO Connected all rings\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "none");
  // Nor are they when another error says what went wrong.
  s = parse_nccl_log(head + retry +
                     "lrdn1629:236813:236852 [1] NCCL WARN Cuda failure 'out of memory'\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "out_of_memory");
  // 2.19+'s counted retries name the peer (pytorch/pytorch#167288).
  s = parse_nccl_log(
      "bj4-ml-g8h20-k8s-slave1026-20250527:5971:6015 [4] NCCL INFO socketPollConnect: connect to "
      "10.29.224.148<52333> returned Connection refused, retrying (20/34) after sleep for 2000 "
      "msec\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "connect_failed");
  EXPECT_EQ(first_error(s).peer, "10.29.224.148<52333>");
}

// A traceback through torch.distributed that ends in a socket's errno text: the connection to
// the rendezvous store (pytorch/pytorch#74146).
TEST(CollectiveLogSocketErrors, DistributedTracebackEndingInASocketError) {
  const std::string tb =
      "Traceback (most recent call last):\n"
      "  File \"/mnt/sdc2/file/project/distributed/index.py\", line 10, in <module>\n"
      "    dist.init_process_group(backend=backend, rank=rank,init_method='tcp://"
      "192.168.1.2:23456',  world_size=2,timeout=datetime.timedelta(seconds=15))\n"
      "  File \"/root/miniconda3/envs/vision/lib/python3.9/site-packages/torch/distributed/"
      "distributed_c10d.py\", line 611, in init_process_group\n"
      "    default_pg._set_sequence_number_for_group()\n";
  NcclLogSummary s = parse_nccl_log(tb + "RuntimeError: Connection reset by peer\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "peer_reset");
  for (const auto& f : judge_nccl_log(s, std::nullopt)) EXPECT_NE(f.code, "nccl_log.no_nccl_info");
  // The same text after another program's traceback is not torch.distributed's.
  s = parse_nccl_log(
      "Traceback (most recent call last):\n"
      "  File \"/usr/lib/python3/dist-packages/requests/adapters.py\", line 501, in send\n"
      "ConnectionResetError: Connection reset by peer\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "none");
}

// c10d's store-based barrier that never completes: a rank never joined the store
// (Lightning-AI/pytorch-lightning#4420).
TEST(CollectiveLogSocketErrors, StoreBarrierThatNeverCompletesIsABootstrapFailure) {
  const std::string wait5 =
      "INFO:root:Waiting in store based barrier to initialize process group for rank: 5, key: "
      "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)\n";
  const std::string wait6 =
      "INFO:root:Waiting in store based barrier to initialize process group for rank: 6, key: "
      "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)\n";
  NcclLogSummary s = parse_nccl_log(wait5 + wait6);
  EXPECT_EQ(s.cause_kind.value_or("none"), "bootstrap_failed");
  EXPECT_EQ(first_error(s).rank, 5);
  for (const auto& f : judge_nccl_log(s, std::nullopt)) EXPECT_NE(f.code, "nccl_log.no_nccl_info");
  // The barrier completed: no failure.
  s = parse_nccl_log(wait5 + wait6 +
                     "INFO:torch.distributed.distributed_c10d:Rank 5: Completed store-based "
                     "barrier for key:store_based_barrier_key:1 with 8 nodes.\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "none");
}

// Batch 12: a stray (non-NCCL) connection to NCCL's listening port: older NCCL's proxy loops on
// it and the job hangs, with no error trace (NVIDIA/nccl#1808); IBext_v10 in channel lines.
TEST(CollectiveLogSocketErrors, WrongMagicOnAcceptIsAFailureWithoutATrace) {
  NcclLogSummary s = parse_nccl_log(
      "2025-08-12 09:37:02.259938 worker-9 >> :172:1231 [6] NCCL INFO Connected all trees\n"
      "2025-08-12 09:37:03.463948 worker-9 >> [2025-08-12 01:37:03] :166:1226 [0] "
      "misc/socket.cc:484 NCCL WARN socketFinalizeAccept: wrong magic 74656d2f20544547 != "
      "7970663b906d70b9\n"
      "2025-08-12 09:37:14.28165 worker-9 >> :168:1836 [2] NCCL INFO Channel 03/0 : 82[2] -> "
      "90[2] [send] via NET/IBext_v10/10/GDRDMA\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_warning");
  EXPECT_EQ(s.network.value_or("null"), "IBext");
  EXPECT_EQ(first_error(s).host, "worker-9");
}

// Batch 13: bind failing on the address of the interface NCCL chose, under bootstrap.cc: the
// bootstrap could not listen (rwth-i6/returnn#1470).
TEST(CollectiveLogSocketErrors, BindFailingUnderTheBootstrapIsTheBootstrap) {
  NcclLogSummary s = parse_nccl_log(
      "nd20-01:275975:275975 [0] NCCL INFO Bootstrap : Using ib0:fe80::ba59:9f03:fc:765c%ib0<0>\n"
      "nd20-01:275975:275975 [0] misc/socket.cc:379 NCCL WARN Call to bind failed : Cannot "
      "assign requested address\n"
      "nd20-01:275975:275975 [0] NCCL INFO bootstrap.cc:176 -> 2\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "bootstrap_failed");
}

}  // namespace
}  // namespace fabkit::nccl_log
