// Rules added after held-out batches 10 to 15 (tests/fixtures/nccl_log/real/README.md), each
// from the real lines of the log whose miss it answers.
#include <gtest/gtest.h>

#include <string>

#include "fabric/nccl_log/nccl_log.h"

namespace fabkit::nccl_log {
namespace {

const NcclLogError& first_error(const NcclLogSummary& s) {
  return s.errors.at(s.failures.at(0).first_error);
}

// A process whose last lines are connect retries had not connected when the log ends
// (NVIDIA/nccl#948: 2.14's "Call to connect returned Connection refused, retrying").
TEST(NcclLogBatch10, ConnectRetriesThatEndTheLogAreAFailedConnect) {
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

// bootstrap.cc's remote allocator thread failing a CUDA allocation (NVIDIA/nccl#844).
TEST(NcclLogBatch10, RemoteAllocatorFailureIsOutOfMemory) {
  NcclLogSummary s = parse_nccl_log(
      "696b7901f9044f23b786795c0ef7257b000000:39:298 [0] bootstrap.cc:279 NCCL WARN [Rem "
      "Allocator] Allocation failed (segment 0, fd 130)\n"
      "696b7901f9044f23b786795c0ef7257b000000:39:298 [0] include/alloc.h:48 NCCL WARN Cuda "
      "failure 'out of memory'\n"
      "696b7901f9044f23b786795c0ef7257b000000:39:298 [0] NCCL INFO bootstrap.cc:231 -> 1\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "out_of_memory");
}

// A SIGBUS in a process of an NCCL job, with no WARN: the /dev/shm segment NCCL mapped could not
// be backed (Docker's 64 MB /dev/shm) (NVIDIA/Megatron-LM#516).
TEST(NcclLogBatch10, BusErrorInAnNcclJobIsSharedMemory) {
  const std::string info =
      "09677202c889:5283:5699 [7] NCCL INFO 24 coll channels, 0 nvls channels, 32 p2p channels, "
      "32 p2p channels per peer\n";
  NcclLogSummary s = parse_nccl_log(
      info + "[09677202c889:5283 :0:5704] Caught signal 7 (Bus error: nonexistent physical "
             "address)\n"
             "==== backtrace (tid:   5704) ====\n"
             " 1 0x000000000008170d ncclGroupEnd()  ???:0\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "shm_exhausted");
  EXPECT_EQ(first_error(s).host, "09677202c889");
  // Another signal is not this.
  s = parse_nccl_log(info + "[09677202c889:5283 :0:5704] Caught signal 11 (Segmentation fault: "
                            "address not mapped to object at address 0x8)\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "none");
}

// aws-ofi-nccl finding no provider: the plugin did not start, so it carried nothing
// (NVIDIA/nccl#229).
TEST(NcclLogBatch10, OfiPluginWithoutAProviderFailedToStart) {
  NcclLogSummary s =
      parse_nccl_log("get_ofi_provider:312 NCCL WARN NET/OFI Could not find any optimal provider\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "plugin_init_failed");
  EXPECT_EQ(s.network.value_or("null"), "null");
}

// ncclGetErrorString's text as users type it: "unhanled system error" (pytorch/pytorch#23363),
// "unhandled CUDA error" (nccl-tests#280, a HIP/RCCL-era capitalisation).
TEST(NcclLogBatch10, ErrorStringsAreMatchedByTheirMeaningfulWords) {
  NcclLogSummary s = parse_nccl_log(
      "fail to new train...e= NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:272, "
      "unhanled system error\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_system_error");
  s = parse_nccl_log("c2211f46f318: Test NCCL failure common.cu:1005 'unhandled CUDA error'\n"
                     ".. c2211f46f318 pid 3288: Test failure common.cu:891\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "cuda_error");
  EXPECT_EQ(first_error(s).host, "c2211f46f318");
}

// c10d's store-based barrier that never completes: a rank never joined the store
// (Lightning-AI/pytorch-lightning#4420).
TEST(NcclLogBatch10, StoreBarrierThatNeverCompletesIsABootstrapFailure) {
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

// A traceback through torch.distributed that ends in a socket's errno text: the connection to
// the rendezvous store (pytorch/pytorch#74146).
TEST(NcclLogBatch10, DistributedTracebackEndingInASocketError) {
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

// Batch 11: NCCL's shared-memory text quoted without its prefix (WangRongsheng/XrayGLM#83).
TEST(NcclLogBatch11, ShmSegmentErrorWithoutNcclPrefix) {
  NcclLogSummary s = parse_nccl_log(
      "Error while creating shared memory segment /dev/shm/nccl-CsYXMW (size 9637888)\n"
      "Traceback (most recent call last):\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "shm_exhausted");
}

// Batch 11: only the watchdog's C++ frames were pasted; checkTimeout throws for a timeout only
// (hiyouga/LlamaFactory#5558).
TEST(NcclLogBatch11, WatchdogCheckTimeoutFrameIsAWatchdogTimeout) {
  NcclLogSummary s = parse_nccl_log(
      "mpi-rc1ou1aw-launcher: frame #0: c10::Error::Error(c10::SourceLocation, std::string) + "
      "0x57 (0x7f7b5ae35897 in /opt/env/lib/python3.10/site-packages/torch/lib/libc10.so)\n"
      "mpi-rc1ou1aw-launcher: frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::"
      "optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f7b5c10ec62 "
      "in /opt/env/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so)\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "watchdog_timeout");
  EXPECT_EQ(first_error(s).host, "mpi-rc1ou1aw-launcher");
}

// Batch 11: a net plugin's name carries its API version ("IBext_v8"): the network is IBext
// (sgl-project/sglang#6017).
TEST(NcclLogBatch11, PluginNetworkNameWithoutItsApiVersion) {
  NcclLogSummary s = parse_nccl_log(
      "hd03-gpu2-0031:14135:14135 [2] NCCL INFO Using non-device net plugin version 0\n"
      "hd03-gpu2-0031:14135:14135 [2] NCCL INFO Using network IBext_v8\n");
  EXPECT_EQ(s.network.value_or("null"), "IBext");
}

// Batch 11: who said it first behind Ray's and vLLM's worker prefixes (OpenRLHF/OpenRLHF#265,
// gpustack/gpustack#2680), a proxy service's rank (mosaicml/diffusion#110) and a host the poster
// masked (sgl-project/sglang#4857).
TEST(NcclLogBatch11, FirstSayerBehindWorkerPrefixesProxyRanksAndMaskedHosts) {
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

// Batch 11: the watchdog's exception text wrapped by the terminal onto the next row, its rank on
// the first (huggingface/open-r1#620): one error, said by rank 2.
TEST(NcclLogBatch11, WatchdogExceptionWrappedOntoTheNextRow) {
  NcclLogSummary s = parse_nccl_log(
      "  what():    what():    what():  [PG ID 0 PG GUID 0(default_pg) Rank 2] Process group "
      "watchdog thread terminated with exception: [Rank 2]\n"
      " Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, "
      "NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran f\n"
      "or 1800010 milliseconds before timing out.\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "watchdog_timeout");
  EXPECT_EQ(first_error(s).rank, 2);
  EXPECT_EQ(s.errors.size(), 1u);
}

// Batch 12: a program error NCCL returned (invalid usage) before any peer went away is what made
// the others' bootstrap see a broken pipe (Lightning-AI/pytorch-lightning#8139).
TEST(NcclLogBatch12, InvalidUsageBeforeThePeersWentIsTheCause) {
  const std::string usage =
      "  RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1614378062065/work/torch/lib/"
      "c10d/ProcessGroupNCCL.cpp:825, invalid usage, NCCL version 2.7.8\n";
  const std::string pipe =
      "  vm1:7389:7453 [0] include/socket.h:421 NCCL WARN Call to recv failed : Broken pipe\n"
      "  vm1:7389:7453 [0] NCCL INFO include/socket.h:438 -> 2\n";
  NcclLogSummary s = parse_nccl_log(usage + "\n" + pipe);
  EXPECT_EQ(s.cause_kind.value_or("none"), "nccl_invalid_usage");
  // After the peer went away, the invalid usage is the consequence (a communicator used after it
  // failed).
  s = parse_nccl_log(pipe + usage);
  EXPECT_EQ(s.cause_kind.value_or("none"), "broken_pipe");
}

// Batch 12: a stray (non-NCCL) connection to NCCL's listening port: older NCCL's proxy loops on
// it and the job hangs, with no error trace (NVIDIA/nccl#1808); IBext_v10 in channel lines.
TEST(NcclLogBatch12, WrongMagicOnAcceptIsAFailureWithoutATrace) {
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

// Batch 12: a WARN pasted with Markdown italics and bold and a doubled space
// (pytorch/pytorch#17703).
TEST(NcclLogBatch12, MarkdownEmphasisAndDoubledSpaces) {
  NcclLogSummary s = parse_nccl_log(
      "_worker0-0d9gnb:15:91 [3] include/socket.h 398 NCCL WARN Call to **write** failed : "
      "Connection reset  by peer.\n"
      "worker0-0d9gnb:15:91 [3] transport.cu:153 NCCL WARN transport.cu:153 ->2 [Proxy thread "
      "error]_\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "peer_reset");
  EXPECT_EQ(first_error(s).host, "worker0-0d9gnb");
}

// Batch 13: an old bootstrap's trace through the socket transport ("transport/net_socket.cu:101
// -> 2" then "bootstrap.cu:76 -> 2 [bthread]"): NCCL 2.3 bootstrapped over sockets whatever the
// network, so that trace names no data network (PaddlePaddle/Paddle#10499); 2.1's bootstrap
// through net_ib.cu does (horovod#210, batch 5).
TEST(NcclLogBatch13, OldBootstrapTraceThroughNetSocketIsNotTheNetwork) {
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

// Batch 13: bind failing on the address of the interface NCCL chose, under bootstrap.cc: the
// bootstrap could not listen (rwth-i6/returnn#1470).
TEST(NcclLogBatch13, BindFailingUnderTheBootstrapIsTheBootstrap) {
  NcclLogSummary s = parse_nccl_log(
      "nd20-01:275975:275975 [0] NCCL INFO Bootstrap : Using ib0:fe80::ba59:9f03:fc:765c%ib0<0>\n"
      "nd20-01:275975:275975 [0] misc/socket.cc:379 NCCL WARN Call to bind failed : Cannot "
      "assign requested address\n"
      "nd20-01:275975:275975 [0] NCCL INFO bootstrap.cc:176 -> 2\n");
  EXPECT_EQ(s.cause_kind.value_or("none"), "bootstrap_failed");
}

// Batch 15: an error line and the next NCCL line joined by a paste that lost its newlines
// (vllm-project/vllm#21661), and Paddle's "Nccl error" (PaddlePaddle/PaddleClas#330).
TEST(NcclLogBatch15, ErrorJoinedToAnNcclLineAndPaddlesNcclError) {
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
TEST(NcclLogBatch15, FirstSayerAfterNamelessFramesAndBeforeLastError) {
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
