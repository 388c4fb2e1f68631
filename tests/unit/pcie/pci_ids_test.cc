#include <gtest/gtest.h>

#include "probes/pcie/pci_ids.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

// The layout of pci.ids (https://pci-ids.ucw.cz): vendors in column 0, devices after one tab,
// subsystems after two; comments start with '#'.
const char* kIds =
    "# comment\n"
    "10de  NVIDIA Corporation\n"
    "\t2330  GH100[H100 SXM5 80GB]\n"
    "\t\t10de 16c1  H100 SXM5 80GB\n"
    "# a comment inside a vendor's section\n"
    "\t2331  GH100 [H100 PCIe]\n"
    "15b3  Mellanox Technologies\n"
    "\t1021  MT2910 Family [ConnectX-7]\n"
    "\n"
    "C 02  Network controller\n"
    "\t00  Ethernet controller\n";

TEST(PciIds, NamesVendorAndDeviceAsLspciDoes) {
  auto n = PciIdNames::from_text(kIds, "test");
  EXPECT_EQ(n.name("0x10de", "0x2330"), "NVIDIA Corporation GH100[H100 SXM5 80GB]");
  EXPECT_EQ(n.name("10DE", "2331"), "NVIDIA Corporation GH100 [H100 PCIe]");
  EXPECT_EQ(n.name("0x15b3", "0x1021"), "Mellanox Technologies MT2910 Family [ConnectX-7]");
  // A device of another vendor or a subsystem id is not this vendor's device.
  EXPECT_EQ(n.name("0x15b3", "0x2330"), "Mellanox Technologies");
  EXPECT_EQ(n.name("0x10de", "0x16c1"), "NVIDIA Corporation");
  EXPECT_EQ(n.name("0x8086", "0x1234"), "");
  EXPECT_EQ(n.name("0x10de", ""), "NVIDIA Corporation");
  EXPECT_EQ(n.name("bogus", "0x2330"), "");
  EXPECT_EQ(PciIdNames().name("0x10de", "0x2330"), "");
}

TEST(PciIds, LoadsTheFileUnderTheRootItIsGiven) {
  testing::TempDir dir("pci_ids");
  EXPECT_EQ(PciIdNames::load(dir.path()).source(), "");
  testing::write_file(dir.path() / "usr/share/hwdata/pci.ids", kIds);
  auto n = PciIdNames::load(dir.path());
  EXPECT_EQ(n.source(), (dir.path() / "usr/share/hwdata/pci.ids").string());
  EXPECT_EQ(n.name("0x10de", "0x2330"), "NVIDIA Corporation GH100[H100 SXM5 80GB]");
  // The first entry is found without a newline before it, as from_text finds it.
  EXPECT_EQ(n.name("0x15b3", "0x1021"), "Mellanox Technologies MT2910 Family [ConnectX-7]");
}

TEST(PciIds, AnEmptyOrRunawayFileIsNoNames) {
  testing::TempDir dir("pci_ids");
  testing::write_file(dir.path() / "usr/share/misc/pci.ids", "");
  testing::write_file(dir.path() / "usr/share/hwdata/pci.ids",
                      std::string("10de  NVIDIA Corporation\n") + std::string(8u << 20, '#'));
  testing::write_file(dir.path() / "usr/share/pci.ids", "15b3  Mellanox Technologies\n");
  // The empty one and the one past the 8 MiB bound are skipped for the next.
  auto n = PciIdNames::load(dir.path());
  EXPECT_EQ(n.source(), (dir.path() / "usr/share/pci.ids").string());
  EXPECT_EQ(n.name("0x15b3", ""), "Mellanox Technologies");
  EXPECT_EQ(n.name("0x10de", ""), "");
}

}  // namespace
}  // namespace fabkit::probes
