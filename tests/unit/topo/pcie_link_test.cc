#include "topo/pcie_link.h"

#include <gtest/gtest.h>

namespace fabkit::topo {
namespace {

TEST(PcieLink, GenerationFromEveryKernelSpelling) {
  EXPECT_EQ(pcie_generation_from_speed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(pcie_generation_from_speed("5.0 GT/s PCIe"), 2);
  EXPECT_EQ(pcie_generation_from_speed("5 GT/s"), 2);  // kernels before 4.18
  EXPECT_EQ(pcie_generation_from_speed("8.0 GT/s PCIe\n"), 3);
  EXPECT_EQ(pcie_generation_from_speed("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(pcie_generation_from_speed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(pcie_generation_from_speed("64.0 GT/s PCIe"), 6);
}

TEST(PcieLink, UnknownAndForeignSpeedsAreNotGenerations) {
  EXPECT_EQ(pcie_generation_from_speed("Unknown speed"), std::nullopt);
  EXPECT_EQ(pcie_generation_from_speed("Unknown"), std::nullopt);
  EXPECT_EQ(pcie_generation_from_speed(""), std::nullopt);
  EXPECT_EQ(pcie_generation_from_speed("16 GB/s"), std::nullopt);  // hwloc's bandwidth, not a rate
  EXPECT_EQ(pcie_generation_from_speed("12.0 GT/s PCIe"), std::nullopt);
  EXPECT_EQ(pcie_generation_from_speed("1.2.3 GT/s"), std::nullopt);
  EXPECT_EQ(pcie_generation_from_speed("-8 GT/s"), std::nullopt);
}

TEST(PcieLink, Widths) {
  EXPECT_EQ(pcie_width_from_text("16\n"), 16);
  EXPECT_EQ(pcie_width_from_text("x8"), 8);
  EXPECT_EQ(pcie_width_from_text("0"), std::nullopt);  // link down
  EXPECT_EQ(pcie_width_from_text("3"), std::nullopt);
  EXPECT_EQ(pcie_width_from_text("16 lanes"), std::nullopt);
  EXPECT_EQ(pcie_width_from_text(""), std::nullopt);
}

TEST(PcieLink, DataRatesFollowTheLineCodes) {
  EXPECT_DOUBLE_EQ(pcie_data_rate_gbps(1, 1), 2.0);
  EXPECT_DOUBLE_EQ(pcie_data_rate_gbps(2, 16), 64.0);
  EXPECT_NEAR(pcie_data_rate_gbps(4, 16), 252.06, 0.01);  // ~31.5 GB/s
  EXPECT_NEAR(pcie_data_rate_gbps(5, 16), 504.12, 0.01);  // ~63 GB/s
  // A Gen5 GPU trained at x8 carries half of Gen5 x16; Gen4 x8 a quarter.
  EXPECT_DOUBLE_EQ(pcie_data_rate_gbps(5, 8) / pcie_data_rate_gbps(5, 16), 0.5);
  EXPECT_DOUBLE_EQ(pcie_data_rate_gbps(4, 8) / pcie_data_rate_gbps(5, 16), 0.25);
  EXPECT_NEAR(pcie_data_rate_gbps(6, 16), 968.0, 0.01);
  EXPECT_EQ(pcie_data_rate_gbps(7, 16), 0);
  EXPECT_EQ(pcie_data_rate_gbps(5, 0), 0);
  EXPECT_EQ(pcie_transfer_rate_gts(5), 32.0);
}

TEST(PcieLink, Names) {
  EXPECT_EQ(to_string(PcieLink{5, 16}), "Gen5 x16");
  EXPECT_EQ(to_string(PcieLink{std::nullopt, 8}), "Gen? x8");
  EXPECT_EQ(to_string(PcieLink{4, std::nullopt}), "Gen4 x?");
}

}  // namespace
}  // namespace fabkit::topo
