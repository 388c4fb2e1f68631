// fabcheck pair's choice of the libfabric provider from the two node reports, and the
// pair.ofi_rdm_* findings (fabric/pair/ofi_rdm_step.h).
#include <gtest/gtest.h>

#include "fabric/pair/ofi_rdm_step.h"

namespace fabkit::pair {
namespace {

Json report(int efa, bool loaded, const std::string& error = "") {
  Json devices = Json::array();
  for (int i = 0; i < efa; ++i)
    devices.push_back({{"name", "rdmap" + std::to_string(i)}, {"driver", "efa"}});
  devices.push_back({{"name", "mlx5_0"}, {"driver", "mlx5_core"}});
  return {{"rdma", {{"devices", devices}}},
          {"libfabric",
           {{"library", {{"loaded", loaded}, {"error", error.empty() ? Json() : Json(error)}}}}}};
}

TEST(OfiRdmChoice, EfaOnBothHostsSelectsEfa) {
  auto c = choose_ofi_provider("a", report(4, true), "b", report(4, true), "");
  ASSERT_TRUE(c.provider);
  EXPECT_EQ(*c.provider, "efa");
  EXPECT_EQ(c.selected_by, "EFA devices on both hosts");
  EXPECT_EQ(efa_device_count(report(32, true)), 32);
}

TEST(OfiRdmChoice, NoEfaDevicesSkipsNamingTheCounts) {
  auto c = choose_ofi_provider("a", report(4, true), "b", report(0, true), "");
  EXPECT_FALSE(c.provider);
  EXPECT_EQ(c.skip_reason,
            "no EFA devices (a: 4, b: 0); give --ofi-provider tcp to run it over libfabric's tcp "
            "provider");
}

TEST(OfiRdmChoice, AskedProviderNeedsLibfabricOnBothHosts) {
  auto unbuilt = choose_ofi_provider("a", report(0, true), "b",
                                     report(0, false, "not built with libfabric (...)"), "tcp");
  EXPECT_FALSE(unbuilt.provider);
  EXPECT_EQ(unbuilt.selected_by, "--ofi-provider");
  EXPECT_EQ(unbuilt.skip_reason, "not built with libfabric (b)");
  auto broken = choose_ofi_provider("a", report(0, false, "dlopen x: undefined symbol"), "b",
                                    report(0, true), "tcp");
  EXPECT_EQ(broken.skip_reason, "libfabric not loadable on a: dlopen x: undefined symbol");
  auto old_report = choose_ofi_provider("a", Json::object(), "b", report(0, true), "tcp");
  EXPECT_EQ(old_report.skip_reason,
            "libfabric not loadable on a: its node report has no libfabric");
  auto ok = choose_ofi_provider("a", report(0, true), "b", report(0, true), "tcp");
  ASSERT_TRUE(ok.provider);
  EXPECT_EQ(*ok.provider, "tcp");
}

std::vector<std::string> codes(const PairFacts& f) {
  std::vector<std::string> out;
  for (const auto& x : judge_ofi_rdm(f)) out.push_back(x.code + ":" + to_string(x.severity));
  return out;
}

TEST(OfiRdmJudge, FindingsForFailedSkippedAndSlowEfa) {
  PairFacts f;
  f.host_a = "a";
  f.host_b = "b";
  f.ofi_rdm.status = "skipped";
  f.ofi_rdm.reason = "no EFA devices (a: 0, b: 0); ...";
  EXPECT_TRUE(codes(f).empty());  // not asked for: the section says why, no finding
  f.ofi_rdm.selected_by = "EFA devices on both hosts";
  f.ofi_rdm.provider = "efa";
  f.ofi_rdm.reason = "libfabric not loadable on b: ...";
  EXPECT_EQ(codes(f), std::vector<std::string>{"pair.ofi_rdm_skipped:warn"});
  f.ofi_rdm.status = "failed";
  f.ofi_rdm.reason = "a: no completion from the peer within 4000 ms while ...";
  EXPECT_EQ(codes(f), std::vector<std::string>{"pair.ofi_rdm_failed:warn"});
  f.ofi_rdm.status = "ran";
  f.ofi_rdm.bandwidth_gbps = 40;
  f.ofi_rdm.tcp_gbps = 80;
  f.ofi_rdm.ratio_to_tcp = 0.5;
  auto fs = judge_ofi_rdm(f);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "pair.ofi_rdm_slower_than_tcp");
  EXPECT_NE(fs[0].message.find("40.00 Gbit/s over EFA against 80.00 Gbit/s over TCP (0.50x)"),
            std::string::npos)
      << fs[0].message;
  f.ofi_rdm.provider = "tcp";  // tcp over TCP sockets: no expectation to compare with
  EXPECT_TRUE(codes(f).empty());
}

}  // namespace
}  // namespace fabkit::pair
