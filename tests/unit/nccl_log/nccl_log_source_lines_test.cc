// The classifier on every error line its sources can print, not only on the wordings the corpus
// happened to hold: source_lines.tsv instantiates the format strings of NCCL's WARN calls (2.4 to
// 2.30: misc/socket.cc, bootstrap.cc, proxy.cc, ibvwrap, net_ib, net_socket, shm, p2p, nvml,
// cudawrap, graph/*, init/enqueue checks), aws-ofi-nccl's NCCL_OFI_WARN calls and PyTorch c10d's
// exceptions and glog lines (ProcessGroupNCCL, NCCLUtils, TCPStore, socket.cpp, Gloo) with their
// printf arguments filled, each with the kind and the network the log shows.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/nccl_log/nccl_failure_kinds.h"
#include "fabric/nccl_log/nccl_log.h"
#include "tests/support/ttar.h"

namespace fabkit::nccl_log {
namespace {

struct Row {
  int line = 0;
  std::string kind, network, from, text;
};

std::vector<Row> rows() {
  const auto path =
      fabkit::testing::project_fixtures().parent_path() / "unit" / "nccl_log" / "source_lines.tsv";
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::vector<Row> out;
  std::string l;
  for (int n = 1; std::getline(in, l); ++n) {
    if (l.empty() || l[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(l);
    for (std::string c; std::getline(ss, c, '\t');) f.push_back(c);
    EXPECT_EQ(f.size(), 4u) << "source_lines.tsv:" << n;
    if (f.size() != 4) continue;
    Row r{n, f[0], f[1], f[2], {}};
    // "\n" in the text separates the lines of a multi-line case.
    for (size_t i = 0; i < f[3].size(); ++i) {
      if (f[3][i] == '\\' && i + 1 < f[3].size() && f[3][i + 1] == 'n') {
        r.text += '\n';
        ++i;
      } else {
        r.text += f[3][i];
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

TEST(NcclLogSourceLines, EveryKindIsKnown) {
  for (const Row& r : rows()) {
    if (r.kind == "none") continue;
    EXPECT_EQ(failure_kind(r.kind).kind, r.kind) << "source_lines.tsv:" << r.line;
  }
}

TEST(NcclLogSourceLines, KindAndNetworkOfEveryLine) {
  const std::vector<Row> all = rows();
  ASSERT_GE(all.size(), 150u);
  int wrong = 0;
  for (const Row& r : all) {
    const NcclLogSummary s = parse_nccl_log(r.text + "\n");
    const std::string kind = s.cause_kind.value_or("none");
    const std::string net = s.network.value_or("-");
    if (kind == r.kind && net == r.network) continue;
    ++wrong;
    ADD_FAILURE() << "source_lines.tsv:" << r.line << " (" << r.from << "): kind " << kind
                  << " (expected " << r.kind << "), network " << net << " (expected " << r.network
                  << ")";
  }
  std::cout << "source lines: " << all.size() - wrong << "/" << all.size() << " right\n";
}

}  // namespace
}  // namespace fabkit::nccl_log

namespace fabkit::nccl_log {
namespace {

// An exception that quotes a CUDA error can reach the log before the WARN of the host that had it
// (Ray and other launchers interleave their workers' streams): NCCL's own line names who said it,
// the exception only repeats it.
TEST(NcclLogFirstSayer, NcclLineBeforeTheExceptionQuotingIt) {
  const NcclLogSummary s = parse_nccl_log(
      "(pid=4022) RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:784, unhandled cuda error, "
      "NCCL version 2.7.8\n"
      "(pid=4021) gpu-a1:4021:4087 [0] NCCL INFO Channel 00/02 :    0   1\n"
      "(pid=4021) gpu-a1:4021:4087 [0] transport/p2p.cc:187 NCCL WARN failed to open CUDA IPC "
      "handle : 201 invalid device context\n");
  ASSERT_EQ(s.cause_kind.value_or("none"), "cuda_error");
  ASSERT_FALSE(s.failures.empty());
  const NcclLogError& first = s.errors.at(s.failures.front().first_error);
  EXPECT_EQ(first.host, "gpu-a1");
  EXPECT_EQ(first.line, 3);
  EXPECT_EQ(s.failures.front().count, 2);
}

}  // namespace
}  // namespace fabkit::nccl_log
