// Which row of the all-reduce comparison is the RDMA one and why (rdma_row.h), and where each row
// ran: a pair without GPUs shows gloo-ibverbs beside the socket rows, saying why NCCL is not it.
#include <gtest/gtest.h>

#include "fabric/pair/verdict.h"

namespace fabkit::pair {
namespace {

// A soft-RoCE node as `fabcheck node` reports it in the VM harness: rxe0 port 1 over `netdev`.
Json roce_node(const std::string& netdev) {
  return {{"rdma",
           {{"source", "sysfs"},
            {"devices", Json::array({{{"name", "rxe0"},
                                      {"ports", Json::array({{{"port", 1},
                                                              {"state", "ACTIVE"},
                                                              {"link_layer", "Ethernet"},
                                                              {"rate_gbps", 2.5},
                                                              {"roce_v2_gid_index", 1},
                                                              {"netdev", netdev}}})}}})}}}};
}

TransportResult run(const std::string& name, double busbw, const std::string& status = "ok",
                    const std::string& reason = "", bool correct = true) {
  TransportResult t;
  t.transport = name;
  t.status = status;
  t.reason = reason;
  if (status == "ok") t.sizes.push_back({65536, 1.0, busbw, busbw, correct});
  return t;
}

PairFacts vm_pair() {
  PairFacts f;
  f.host_a = "198.18.60.11";
  f.host_b = "198.18.60.12";
  f.a.host = f.host_a;
  f.b.host = f.host_b;
  f.a.report = roce_node("eth0");
  f.b.report = roce_node("eth0");
  LinkResult l;
  l.a = {"eth0", "198.18.60.11", 24, 9000, std::nullopt, "physical"};
  l.b = {"eth0", "198.18.60.12", 24, 9000, std::nullopt, "physical"};
  l.status = "open";
  l.single_stream_gbit_s = 0.9;
  f.links = {l};
  f.transports = {run("fabkit-socket", 0.017), run("gloo-tcp", 0.009), run("gloo-ibverbs", 0.004)};
  return f;
}

TEST(RdmaRow, WithoutNcclTheRdmaRowIsGlooIbverbsOnThePortOverTheSocketRowsInterface) {
  PairFacts f = vm_pair();
  Verdict v = compute_verdict(f);
  ASSERT_EQ(v.rdma.transport, std::optional<std::string>("gloo-ibverbs"));
  EXPECT_NE(v.rdma.reason.find("needs no GPU"), std::string::npos) << v.rdma.reason;
  EXPECT_NE(v.rdma.reason.find("not in the agents' fabcheck build"), std::string::npos)
      << v.rdma.reason;
  EXPECT_NE(v.rdma.reason.find("compare transports on one link"), std::string::npos)
      << v.rdma.reason;
  for (const auto& r : v.ranking) {
    if (r.transport == "gloo-ibverbs")
      EXPECT_EQ(r.via, "rxe0:1 (eth0) <-> rxe0:1 (eth0), RoCE");
    else
      EXPECT_EQ(r.via, "eth0 <-> eth0") << r.transport;
  }
  // The slowest row is still the RDMA row: it is chosen by kind, not by speed.
  EXPECT_EQ(v.transport, std::optional<std::string>("fabkit-socket"));
}

TEST(RdmaRow, UnavailableNcclIsQuotedAsTheReasonItIsNotTheRdmaRow) {
  PairFacts f = vm_pair();
  f.transports.push_back(
      run("nccl-roce", 0, "unavailable", "rank 0: no GPU visible (CUDA_VISIBLE_DEVICES)"));
  Verdict v = compute_verdict(f);
  ASSERT_EQ(v.rdma.transport, std::optional<std::string>("gloo-ibverbs"));
  EXPECT_NE(v.rdma.reason.find("did not run (nccl-roce unavailable: rank 0: no GPU visible"),
            std::string::npos)
      << v.rdma.reason;
}

TEST(RdmaRow, NcclOverRdmaIsTheRowWhereItRan) {
  PairFacts f = vm_pair();
  f.transports.push_back(run("nccl-roce", 0.003));
  Verdict v = compute_verdict(f);
  EXPECT_EQ(v.rdma.transport, std::optional<std::string>("nccl-roce"));
  EXPECT_NE(v.rdma.reason.find("a GPU job runs"), std::string::npos) << v.rdma.reason;
}

TEST(RdmaRow, AFailedOrWrongRdmaRunIsNoRowAndSaysWhy) {
  PairFacts f = vm_pair();
  f.transports[2] = run("gloo-ibverbs", 0, "failed", "rank 0: gloo: Read timeout");
  Verdict v = compute_verdict(f);
  EXPECT_FALSE(v.rdma.transport.has_value());
  EXPECT_NE(v.rdma.reason.find("gloo-ibverbs failed: rank 0: gloo: Read timeout"),
            std::string::npos)
      << v.rdma.reason;
  f.transports[2] = run("gloo-ibverbs", 0.004, "ok", "", /*correct=*/false);
  v = compute_verdict(f);
  EXPECT_FALSE(v.rdma.transport.has_value());
  EXPECT_NE(v.rdma.reason.find("gloo-ibverbs gave a wrong result"), std::string::npos)
      << v.rdma.reason;
  f.transports.pop_back();
  EXPECT_EQ(compute_verdict(f).rdma.reason, "no RDMA all-reduce transport was run");
}

TEST(RdmaRow, APortOnAnotherInterfaceIsNamedAsADifferentLink) {
  PairFacts f = vm_pair();
  f.a.report = roce_node("eth1");
  Verdict v = compute_verdict(f);
  EXPECT_NE(
      v.rdma.reason.find("not the socket rows' eth0 / eth0: the rows compare different links"),
      std::string::npos)
      << v.rdma.reason;
}

}  // namespace
}  // namespace fabkit::pair
