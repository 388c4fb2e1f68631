// The pair section carries, per NCCL transport, the network NCCL used and the net plugin that
// carried it, from the runner's own record (extra.net, nccl_runner.cc).
#include <gtest/gtest.h>

#include "fabric/pair/pair_document.h"
#include "fabric/pair/pair_facts.h"

namespace fabkit::pair {
namespace {

TEST(PairNetSection, TransportSaysWhichNetPluginCarriedIt) {
  PairFacts f;
  f.host_a = "n1";
  f.host_b = "n2";
  TransportResult nccl;
  nccl.transport = "nccl-ib";
  nccl.status = "ok";
  nccl.sizes.push_back(SizeRow{1 << 20, 100.0, 10.0, 10.0, true});
  const Json net = {{"name", "AWS Libfabric"},
                    {"plugin", "/opt/amazon/ofi-nccl/lib/libnccl-net.so"},
                    {"plugin_version", "1.14.2"},
                    {"loaded_plugin", "/opt/amazon/ofi-nccl/lib/libnccl-net.so"}};
  nccl.ranks = Json::array({{{"transport", "nccl-ib"}, {"extra", {{"net", net}}}},
                            {{"transport", "nccl-ib"}, {"extra", Json::object()}}});
  TransportResult gloo;
  gloo.transport = "gloo-tcp";
  gloo.status = "ok";
  gloo.sizes.push_back(SizeRow{1 << 20, 200.0, 5.0, 5.0, true});
  f.transports = {nccl, gloo};
  Report r = build_pair_report(f);
  const Json& s = r.sections.at(0).facts;
  bool seen_nccl = false, seen_gloo = false;
  for (const auto& t : s["transports"]) {
    if (t["transport"] == "nccl-ib") {
      seen_nccl = true;
      EXPECT_EQ(t["net"], net);
    } else {
      seen_gloo = true;
      EXPECT_FALSE(t.contains("net")) << "only NCCL transports say which net they used";
    }
  }
  EXPECT_TRUE(seen_nccl && seen_gloo) << s["transports"].dump();
}

}  // namespace
}  // namespace fabkit::pair
