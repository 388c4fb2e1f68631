// NCCL's XML topology (graph/xml.h, graph/xml.cc): a topology file or algorithm XML it cannot use
// stops communicator setup, and NCCL reports it as an internal error. Each test uses the real
// lines of a public thread's log (held-out batch 16, tests/fixtures/nccl_log/real/README.md).
#include <gtest/gtest.h>

#include <string>

#include "fabric/nccl_log/nccl_failure_kinds.h"
#include "fabric/nccl_log/nccl_log.h"

namespace fabkit::nccl_log {
namespace {

std::string cause_of(const std::string& log) {
  return parse_nccl_log(log).cause_kind.value_or("none");
}

// "Attribute arch of node cpu not found" with its error trace -> 3 (NVIDIA/nccl#379, an
// NCCL_TOPO_FILE; aws-ofi-nccl#785, the plugin's static p5 topology), inside PyTorch's
// exception after "Last error:" (TinyLLaVA_Factory#112), and an SCCL algorithm XML's missing
// attribute (microsoft/msccl-tools#4).
TEST(CollectiveLogTopology, MissingXmlAttributeIsATopologyError) {
  EXPECT_EQ(cause_of("graph/xml.h:77 NCCL WARN Attribute arch of node cpu not found\n"
                     "NCCL INFO graph/topo.cc:380 -> 3\n"
                     "NCCL INFO graph/topo.cc:466 -> 3\n"
                     "NCCL INFO init.cc:581 -> 3\n"
                     "NCCL INFO group.cc:73 -> 3 [Async thread]\n"),
            "topology_error");
  EXPECT_EQ(cause_of("2a8874e7d1e6:2196:2275 [1] graph/xml.h:101 NCCL WARN Attribute arch of node "
                     "cpu not found\n"
                     "2a8874e7d1e6:2196:2275 [1] NCCL INFO graph/topo.cc:493 -> 3\n"
                     "2a8874e7d1e6:2196:2275 [1] NCCL INFO graph/topo.cc:623 -> 3\n"),
            "topology_error");
  EXPECT_EQ(cause_of("torch.distributed.DistBackendError: NCCL error in: "
                     "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp\n"
                     ":1331, internal error - please report this issue to the NCCL developers, "
                     "NCCL version 2.18.1          \n"
                     "ncclInternalError: Internal check failed.                          \n"
                     "Last error:                                                        \n"
                     "Attribute arch of node cpu not found\n"),
            "topology_error");
  EXPECT_EQ(cause_of("207a4cb58d57:59200:59216 [0] graph/xml.h:82 NCCL WARN Attribute ngpus of "
                     "node algo not found\n"),
            "topology_error");
}

// The finding says what to do: the topology file and a container's /sys.
TEST(CollectiveLogTopology, TheFixNamesTheTopologyFileAndSys) {
  const FailureKind& k = failure_kind("topology_error");
  ASSERT_EQ(std::string(k.kind), "topology_error");
  EXPECT_EQ(k.tier, FailureTier::kRoot);
  const std::string fix = k.fix;
  EXPECT_NE(fix.find("NCCL_TOPO_FILE"), std::string::npos);
  EXPECT_NE(fix.find("/sys"), std::string::npos);
  const NcclLogSummary s = parse_nccl_log(
      "2a8874e7d1e6:2196:2275 [1] graph/xml.h:101 NCCL WARN Attribute arch of node cpu not "
      "found\n");
  bool failed = false;
  for (const auto& f : judge_nccl_log(s, std::nullopt))
    if (f.code == "nccl_log.topology_error") {
      failed = f.severity == Severity::kFail;
      EXPECT_NE(f.fix.find("NCCL_TOPO_FILE"), std::string::npos);
    }
  EXPECT_TRUE(failed);
}

}  // namespace
}  // namespace fabkit::nccl_log
