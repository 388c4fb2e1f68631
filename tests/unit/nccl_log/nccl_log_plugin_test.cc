// Which net plugin NCCL loaded, from where, and which version of it: the plugin loader's and the
// plugins' own init lines. Each test uses the real lines of a public thread's log (named beside
// it; tests/fixtures/nccl_net/README.md lists them).
#include <gtest/gtest.h>

#include <string>

#include "fabric/nccl_log/nccl_log.h"

namespace fabkit::nccl_log {
namespace {

// NCCL 2.19-2.22's loader names the file it opened (NVIDIA/nccl#1357, ProHuper, HPC-X's SHARP
// plugin).
TEST(CollectiveLogPlugin, PluginPathFromTheLoader) {
  NcclLogSummary s = parse_nccl_log(
      "qh100-gpu20:39629:39686 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.\n"
      "qh100-gpu20:39629:39686 [0] NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 "
      "(v6)\n"
      "qh100-gpu20:39629:39686 [0] NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v8 "
      "symbol.\n"
      "qh100-gpu20:39629:39686 [0] NCCL INFO NET/Plugin: Loaded collnet plugin SHARP (v6)\n"
      "qh100-gpu20:39629:39686 [0] NCCL INFO Plugin Path : "
      "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n");
  EXPECT_EQ(s.plugin.value_or("null"), "NCCL RDMA Plugin v6");
  EXPECT_EQ(s.plugin_path.value_or("null"), "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so");
  EXPECT_TRUE(s.errors.empty());
}

// aws-ofi-nccl >= 1.6 logs "Initializing " PACKAGE_STRING (aws/aws-ofi-nccl#889, 2025-05-22;
// aws/aws-k8s-tester#454 for a "-aws" release).
TEST(CollectiveLogPlugin, OfiPluginVersion) {
  NcclLogSummary s = parse_nccl_log(
      "ip-10-36-22-140:79:2499 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.14.2\n"
      "ip-10-36-22-140:79:2499 [0] NCCL INFO NET/OFI Using Libfabric version 2.1\n");
  EXPECT_EQ(s.plugin.value_or("null"), "aws-ofi-nccl");
  EXPECT_EQ(s.plugin_version.value_or("null"), "1.14.2");
  s = parse_nccl_log(
      "[1,30]<stdout>:bert-mpi-training-worker-3:27:569 [6] NCCL INFO NET/OFI Initializing "
      "aws-ofi-nccl 1.9.1-aws\n");
  EXPECT_EQ(s.plugin_version.value_or("null"), "1.9.1-aws");
}

// GCP A3's GPUDirect-TCPX plugin states its version, with the empty suffix after the last dot
// (skypilot-org/skypilot@9a3aa4d examples/gcp_gpu_direct_tcpx/README.md).
TEST(CollectiveLogPlugin, TcpxPluginVersion) {
  NcclLogSummary s = parse_nccl_log(
      "NCCL INFO NET/GPUDirectTCPX ver. 3.1.8.\n"
      "NCCL INFO NET/GPUDirectTCPX : GPUDirectTCPX enable: 1\n");
  EXPECT_EQ(s.plugin.value_or("null"), "GPUDirectTCPX");
  EXPECT_EQ(s.plugin_version.value_or("null"), "3.1.8");
  EXPECT_TRUE(s.errors.empty());
}

}  // namespace
}  // namespace fabkit::nccl_log
