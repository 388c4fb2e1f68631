// NCCL's list grammar, case by case against what NCCL's parseStringList/matchIfList do.
#include <gtest/gtest.h>

#include "probes/net/nccl_list.h"

namespace fabkit::probes {
namespace {

const std::vector<std::string> kHcas = {"mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", "mlx5_2"};

TEST(NcclList, PrefixListMatchesByPrefix) {
  auto l = parse_nccl_list("eth,ib", kNcclMaxSocketEntries);
  EXPECT_FALSE(l.exclude);
  EXPECT_FALSE(l.exact);
  ASSERT_EQ(l.entries.size(), 2u);
  EXPECT_TRUE(nccl_list_selects(l, "eth0"));
  EXPECT_TRUE(nccl_list_selects(l, "ib1"));
  EXPECT_FALSE(nccl_list_selects(l, "eno1"));
  EXPECT_TRUE(l.issues.empty());
}

TEST(NcclList, BarePrefixAlsoMatchesLongerNames) {
  auto l = parse_nccl_list("mlx5_1", kNcclMaxHcaEntries);
  EXPECT_EQ(nccl_list_select(l, kHcas), (std::vector<std::string>{"mlx5_1", "mlx5_10", "mlx5_11"}));
  auto amb = nccl_list_ambiguities(l, kHcas);
  ASSERT_EQ(amb.size(), 1u);
  EXPECT_EQ(amb[0].entry, "mlx5_1");
  EXPECT_TRUE(amb[0].names_one_device);
  EXPECT_EQ(amb[0].matched.size(), 3u);
}

TEST(NcclList, FamilyPrefixIsAmbiguousButDeliberate) {
  auto amb = nccl_list_ambiguities(parse_nccl_list("mlx5", 32), kHcas);
  ASSERT_EQ(amb.size(), 1u);
  EXPECT_FALSE(amb[0].names_one_device);
}

TEST(NcclList, ExactMatchesWholeNamesOnly) {
  auto l = parse_nccl_list("=mlx5_1", kNcclMaxHcaEntries);
  EXPECT_TRUE(l.exact);
  EXPECT_EQ(nccl_list_select(l, kHcas), (std::vector<std::string>{"mlx5_1"}));
  EXPECT_TRUE(nccl_list_ambiguities(l, kHcas).empty());
}

TEST(NcclList, CaretExcludes) {
  auto l = parse_nccl_list("^docker,lo", kNcclMaxSocketEntries);
  EXPECT_TRUE(l.exclude);
  EXPECT_FALSE(nccl_list_selects(l, "docker0"));
  EXPECT_FALSE(nccl_list_selects(l, "lo"));
  EXPECT_FALSE(nccl_list_selects(l, "lonely0"));  // prefix: "lo" catches it too
  EXPECT_TRUE(nccl_list_selects(l, "eth0"));
}

TEST(NcclList, CaretEqualsExcludesExactName) {
  auto l = parse_nccl_list("^=docker0", kNcclMaxSocketEntries);
  EXPECT_TRUE(l.exclude);
  EXPECT_TRUE(l.exact);
  EXPECT_FALSE(nccl_list_selects(l, "docker0"));
  EXPECT_TRUE(nccl_list_selects(l, "docker01"));
  EXPECT_TRUE(l.issues.empty());
}

TEST(NcclList, EqualsCaretIsAnIncludeListAndSaysSo) {
  // NCCL: searchExact, then parseStringList drops the '^': "=^eth0" keeps eth0 only.
  auto l = parse_nccl_list("=^eth0", kNcclMaxSocketEntries);
  EXPECT_FALSE(l.exclude);
  EXPECT_TRUE(l.exact);
  EXPECT_TRUE(nccl_list_selects(l, "eth0"));
  EXPECT_FALSE(nccl_list_selects(l, "eth1"));
  ASSERT_EQ(l.issues.size(), 1u);
  EXPECT_NE(l.issues[0].find("^=eth0"), std::string::npos);
}

TEST(NcclList, PortsRestrictHcaEntries) {
  auto l = parse_nccl_list("=mlx5_0:1,mlx5_1", kNcclMaxHcaEntries);
  ASSERT_EQ(l.entries.size(), 2u);
  EXPECT_EQ(l.entries[0].port, 1);
  EXPECT_EQ(l.entries[1].port, -1);
  EXPECT_TRUE(nccl_list_selects(l, "mlx5_0", 1));
  EXPECT_FALSE(nccl_list_selects(l, "mlx5_0", 2));
  EXPECT_TRUE(nccl_list_selects(l, "mlx5_1", 2));
  EXPECT_EQ(to_string(l.entries[0]), "mlx5_0:1");
}

TEST(NcclList, ExcludeWithPortExcludesOnlyThatPort) {
  auto l = parse_nccl_list("^mlx5_0:2", kNcclMaxHcaEntries);
  EXPECT_TRUE(nccl_list_selects(l, "mlx5_0", 1));
  EXPECT_FALSE(nccl_list_selects(l, "mlx5_0", 2));
}

TEST(NcclList, BadPortReadsAsZeroAndIsReported) {
  auto l = parse_nccl_list("mlx5_0:x", kNcclMaxHcaEntries);
  ASSERT_EQ(l.entries.size(), 1u);
  EXPECT_EQ(l.entries[0].port, 0);
  EXPECT_FALSE(nccl_list_selects(l, "mlx5_0", 1));
  EXPECT_EQ(l.issues.size(), 1u);
}

TEST(NcclList, EmptyEntriesAreSkippedLikeNccl) {
  auto l = parse_nccl_list("eth0,,:1,eth1,", kNcclMaxSocketEntries);
  ASSERT_EQ(l.entries.size(), 2u);
  EXPECT_EQ(l.entries[1].prefix, "eth1");
  EXPECT_EQ(l.issues.size(), 1u);  // ":1" has no name
}

TEST(NcclList, WhitespaceIsNotTrimmed) {
  auto l = parse_nccl_list("eth0, eth1", kNcclMaxSocketEntries);
  EXPECT_TRUE(nccl_list_selects(l, "eth0"));
  EXPECT_FALSE(nccl_list_selects(l, "eth1"));
  EXPECT_EQ(nccl_list_unmatched(l, {"eth0", "eth1"}), (std::vector<std::string>{" eth1"}));
  EXPECT_EQ(l.issues.size(), 1u);
}

TEST(NcclList, EntriesPastTheLimitAreDropped) {
  std::string many;
  for (int i = 0; i < 20; ++i) many += (i ? "," : "") + std::string("eth") + std::to_string(i);
  // Exact names: as prefixes, "eth1" would still catch eth19.
  auto l = parse_nccl_list("=" + many, kNcclMaxSocketEntries);
  EXPECT_EQ(l.entries.size(), kNcclMaxSocketEntries);
  EXPECT_TRUE(nccl_list_selects(l, "eth15"));
  EXPECT_FALSE(nccl_list_selects(l, "eth19"));
  EXPECT_EQ(l.issues.size(), 1u);
}

TEST(NcclList, EmptyListSelectsEverything) {
  auto l = parse_nccl_list("^", kNcclMaxSocketEntries);
  EXPECT_TRUE(l.entries.empty());
  EXPECT_TRUE(nccl_list_selects(l, "anything"));
  EXPECT_EQ(l.issues.size(), 1u);
}

}  // namespace
}  // namespace fabkit::probes
