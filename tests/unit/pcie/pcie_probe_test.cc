// The PCIe probe on the sysfs trees of tests/fixtures/pcie (README.md there): a GPU node's PCI
// tree in the kernel's file formats, and overlays with one fault each.
#include <gtest/gtest.h>

#include "probes/pcie/pcie_facts.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

using testing::TempDir;
using testing::write_file;

std::filesystem::path fixture(const std::string& name) {
  return testing::project_fixtures() / "pcie" / name;
}

struct Node {
  TempDir dir{"pcie"};
  ProbeContext ctx;
  // The healthy tree, the pci.ids excerpt, then each overlay in order.
  explicit Node(std::vector<std::string> overlays = {}) {
    testing::unpack_ttar(fixture("sysfs_gpu_node.ttar"), dir.path(), "");
    testing::unpack_ttar(fixture("pci_ids_excerpt.ttar"), dir.path(), "");
    for (const auto& o : overlays) testing::unpack_ttar(fixture(o), dir.path(), "");
    ctx.roots = SystemRoots::under(dir.path());
  }
  PcieFacts gather() const { return gather_pcie(ctx); }
};

const PcieDevice& dev(const PcieFacts& f, const std::string& bus) {
  for (const auto& d : f.devices)
    if (d.bus_id == bus) return d;
  throw std::runtime_error("no device " + bus);
}

bool present(const PcieFacts& f, const std::string& bus) {
  for (const auto& d : f.devices)
    if (d.bus_id == bus) return true;
  return false;
}

std::vector<Finding> with(const std::vector<Finding>& fs, const std::string& code) {
  std::vector<Finding> out;
  for (const auto& f : fs)
    if (f.code == code) out.push_back(f);
  return out;
}

int worse_than_info(const std::vector<Finding>& fs) {
  int n = 0;
  for (const auto& f : fs) n += f.severity != Severity::kInfo;
  return n;
}

TEST(PcieProbe, HealthyTreeFindsTheDevicesTheirBridgesAndWhichSideOfEachLink) {
  Node n;
  PcieFacts f = n.gather();
  ASSERT_TRUE(f.pci_bus_present);
  EXPECT_EQ(dev(f, "0000:02:00.0").role, PciRole::kGpu);
  EXPECT_EQ(dev(f, "0000:18:00.0").role, PciRole::kGpu);
  EXPECT_EQ(dev(f, "0000:19:00.0").role, PciRole::kNic);
  // The NIC's virtual function shares its link; the NVMe drive and its port are not looked at.
  EXPECT_FALSE(present(f, "0000:19:00.1"));
  EXPECT_FALSE(present(f, "0000:03:00.0"));
  EXPECT_FALSE(present(f, "0000:00:03.0"));
  EXPECT_EQ(dev(f, "0000:00:02.0").port, PciPort::kRootPort);
  EXPECT_EQ(dev(f, "0000:15:01.0").port, PciPort::kRootPort);
  EXPECT_EQ(dev(f, "0000:16:00.0").port, PciPort::kUpstreamPort);
  EXPECT_EQ(dev(f, "0000:17:00.0").port, PciPort::kDownstreamPort);
  EXPECT_EQ(dev(f, "0000:17:01.0").port, PciPort::kDownstreamPort);
  EXPECT_EQ(dev(f, "0000:18:00.0").port, PciPort::kEndpoint);
  EXPECT_EQ(dev(f, "0000:18:00.0").parent, "0000:17:00.0");
  EXPECT_EQ(dev(f, "0000:16:00.0").parent, "0000:15:01.0");
  EXPECT_FALSE(dev(f, "0000:15:01.0").parent);
  EXPECT_EQ(dev(f, "0000:16:00.0").below,
            (std::vector<std::string>{"0000:18:00.0", "0000:19:00.0"}));
  EXPECT_EQ(dev(f, "0000:18:00.0").name, "NVIDIA Corporation GH100[H100 SXM5 80GB]");
  EXPECT_EQ(dev(f, "0000:19:00.0").name, "Mellanox Technologies MT2910 Family [ConnectX-7]");
  EXPECT_EQ(dev(f, "0000:00:02.0").name, "Intel Corporation");  // 352a is not in this pci.ids
  EXPECT_EQ(dev(f, "0000:18:00.0").driver, "nvidia");
  EXPECT_EQ(dev(f, "0000:18:00.0").current.generation, 5);
  EXPECT_EQ(dev(f, "0000:18:00.0").current.width, 16);
  ASSERT_TRUE(dev(f, "0000:18:00.0").aer_correctable);
  EXPECT_EQ(dev(f, "0000:18:00.0").aer_correctable->total, 0u);
  EXPECT_EQ(describe(dev(f, "0000:18:00.0")),
            "GPU 0000:18:00.0 (NVIDIA Corporation GH100[H100 SXM5 80GB], driver nvidia)");
  auto fs = judge_pcie(f);
  EXPECT_EQ(worse_than_info(fs), 0);
  auto checked = with(fs, "pcie.checked");
  ASSERT_EQ(checked.size(), 1u);
  EXPECT_NE(checked[0].message.find("2 GPU(s), 1 NIC(s), 0 NVSwitch(es) and 5 bridge(s)"),
            std::string::npos)
      << checked[0].message;
  EXPECT_NE(checked[0].message.find("4 of 4 link(s)"), std::string::npos) << checked[0].message;
  Json j = to_json(f);
  EXPECT_EQ(j["devices"].size(), 8u);
  EXPECT_EQ(j["names_source"], (n.dir.path() / "usr/share/misc/pci.ids").string());
}

// The case: an H100 trained at Gen4 x8 of its Gen5 x16.
TEST(PcieProbe, GpuAtGen4X8OfGen5X16WarnsWithTheBandwidthLost) {
  Node n({"overlay_gpu_gen4_x8.ttar"});
  auto fs = judge_pcie(n.gather());
  auto w = with(fs, "pcie.link_width_degraded");
  ASSERT_EQ(w.size(), 1u);  // the root port reports the same link: one finding
  EXPECT_EQ(w[0].severity, Severity::kWarn);
  EXPECT_EQ(w[0].subject, "0000:02:00.0");
  EXPECT_NE(w[0].message.find("GPU 0000:02:00.0 (NVIDIA Corporation GH100[H100 SXM5 80GB], driver "
                              "nvidia) runs at Gen4 x8; the link can run Gen5 x16: 15.8 GB/s of "
                              "63.0 GB/s per direction (25%; 47.3 GB/s lost)"),
            std::string::npos)
      << w[0].message;
  EXPECT_NE(w[0].message.find("the width is not"), std::string::npos);
  EXPECT_NE(w[0].fix.find("lspci -vv -s 0000:02:00.0"), std::string::npos);
  EXPECT_EQ(worse_than_info(fs), 1);
}

TEST(PcieProbe, ABridgeTrainedNarrowNamesEveryDeviceBelowIt) {
  Node n({"overlay_bridge_x8.ttar"});
  auto fs = judge_pcie(n.gather());
  auto w = with(fs, "pcie.link_width_degraded");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].subject, "0000:16:00.0");
  EXPECT_NE(w[0].message.find("switch upstream port 0000:16:00.0"), std::string::npos);
  EXPECT_NE(w[0].message.find("runs at Gen5 x8; the link can run Gen5 x16"), std::string::npos);
  EXPECT_NE(w[0].message.find("It limits everything below it: GPU 0000:18:00.0"), std::string::npos)
      << w[0].message;
  EXPECT_NE(w[0].message.find("NIC 0000:19:00.0"), std::string::npos);
  EXPECT_EQ(worse_than_info(fs), 1);
}

TEST(PcieProbe, AnIdleGpuAtGen1IsAWarningToRecheckUnderLoad) {
  Node n({"overlay_gpu_idle_gen1.ttar"});
  auto fs = judge_pcie(n.gather());
  auto w = with(fs, "pcie.link_speed_low_gpu");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].severity, Severity::kWarn);
  EXPECT_EQ(w[0].subject, "0000:18:00.0");
  EXPECT_NE(w[0].message.find("runs at Gen1 x16"), std::string::npos);
  EXPECT_NE(w[0].fix.find("while a job runs"), std::string::npos);
  EXPECT_EQ(worse_than_info(fs), 1);
}

TEST(PcieProbe, AerCountsByDeviceAndSeverity) {
  Node n({"overlay_aer_counts.ttar"});
  auto fs = judge_pcie(n.gather());
  auto fatal = with(fs, "pcie.aer_fatal");
  ASSERT_EQ(fatal.size(), 1u);
  EXPECT_EQ(fatal[0].severity, Severity::kFail);
  EXPECT_EQ(fatal[0].subject, "0000:00:02.0");
  EXPECT_NE(fatal[0].message.find("1 fatal uncorrectable PCIe errors since boot (SDES 1)"),
            std::string::npos)
      << fatal[0].message;
  EXPECT_NE(fatal[0].message.find("above GPU 0000:02:00.0"), std::string::npos);
  auto nonfatal = with(fs, "pcie.aer_nonfatal");
  ASSERT_EQ(nonfatal.size(), 1u);
  EXPECT_EQ(nonfatal[0].severity, Severity::kWarn);
  EXPECT_EQ(nonfatal[0].subject, "0000:17:01.0");
  EXPECT_NE(nonfatal[0].message.find("CmpltTO 2"), std::string::npos);
  auto cor = with(fs, "pcie.aer_correctable_high");
  ASSERT_EQ(cor.size(), 1u);
  EXPECT_EQ(cor[0].subject, "0000:18:00.0");
  EXPECT_NE(cor[0].message.find("157 correctable PCIe errors since boot (BadTLP 37, RxErr 120)"),
            std::string::npos)
      << cor[0].message;
}

TEST(PcieProbe, ALiveRunWarnsWhenCorrectableErrorsRiseBetweenTheTwoReads) {
  Node n;
  n.ctx.roots.live = true;  // the tree stands in for a live /sys: reread_pcie_aer reads again
  PcieFacts f = n.gather();
  write_file(n.dir.path() /
                 "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0/"
                 "aer_dev_correctable",
             "RxErr 4\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\n"
             "HeaderOF 0\nTOTAL_ERR_COR 4\n");
  reread_pcie_aer(n.ctx, f, 5);
  EXPECT_GE(f.aer_interval_ms, 5);
  EXPECT_EQ(dev(f, "0000:18:00.0").aer_correctable_rise, 4u);
  EXPECT_EQ(dev(f, "0000:02:00.0").aer_correctable_rise, 0u);
  auto rising = with(judge_pcie(f), "pcie.aer_correctable_rising");
  ASSERT_EQ(rising.size(), 1u);
  EXPECT_EQ(rising[0].severity, Severity::kWarn);
  EXPECT_NE(rising[0].message.find("rose by 4 in"), std::string::npos);
  // A capture is one moment: nothing is read again.
  Node capture;
  PcieFacts c = capture.gather();
  reread_pcie_aer(capture.ctx, c, 5);
  EXPECT_EQ(c.aer_interval_ms, 0);
  EXPECT_FALSE(dev(c, "0000:18:00.0").aer_correctable_rise);
}

// A tree written file by file for the cases the fixture does not hold.
struct Tree {
  TempDir dir{"pcie_tree"};
  ProbeContext ctx;
  Tree() { ctx.roots = SystemRoots::under(dir.path()); }
  void device(const std::string& path, const std::string& vendor, const std::string& cls,
              const std::string& speed, const std::string& width, const std::string& max_speed,
              const std::string& max_width) {
    const auto d = dir.path() / "sys/devices" / path;
    write_file(d / "vendor", vendor + "\n");
    write_file(d / "device", "0x0001\n");
    write_file(d / "class", cls + "\n");
    if (!speed.empty()) {
      write_file(d / "current_link_speed", speed + "\n");
      write_file(d / "current_link_width", width + "\n");
      write_file(d / "max_link_speed", max_speed + "\n");
      write_file(d / "max_link_width", max_width + "\n");
    }
    const std::string bdf = std::filesystem::path(path).filename();
    std::filesystem::create_directories(dir.path() / "sys/bus/pci/devices");
    std::filesystem::create_symlink("../../../devices/" + path,
                                    dir.path() / "sys/bus/pci/devices" / bdf);
  }
};

TEST(PcieProbe, ANicThatTrainedSlowIsAFaultNotIdlePowerSaving) {
  Tree t;
  t.device("pci0000:00/0000:00:01.0", "0x8086", "0x060400", "16.0 GT/s PCIe", "16",
           "32.0 GT/s PCIe", "16");
  t.device("pci0000:00/0000:00:01.0/0000:01:00.0", "0x15b3", "0x020000", "16.0 GT/s PCIe", "16",
           "32.0 GT/s PCIe", "16");
  auto w = with(judge_pcie(gather_pcie(t.ctx)), "pcie.link_speed_degraded");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].severity, Severity::kWarn);
  EXPECT_NE(w[0].message.find("NIC 0000:01:00.0 ([15b3:0001]) runs at Gen4 x16"), std::string::npos)
      << w[0].message;
}

TEST(PcieProbe, AGen5DeviceUnderAGen4PortIsAPlatformLimit) {
  Tree t;
  t.device("pci0000:00/0000:00:01.0", "0x8086", "0x060400", "16.0 GT/s PCIe", "16",
           "16.0 GT/s PCIe", "16");
  t.device("pci0000:00/0000:00:01.0/0000:01:00.0", "0x10de", "0x030200", "16.0 GT/s PCIe", "16",
           "32.0 GT/s PCIe", "16");
  auto fs = judge_pcie(gather_pcie(t.ctx));
  EXPECT_EQ(worse_than_info(fs), 0);
  auto p = with(fs, "pcie.platform_limit");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].message.find("can run Gen5 x16 but the port above it, root port 0000:00:01.0"),
            std::string::npos)
      << p[0].message;
  EXPECT_NE(p[0].message.find("the link's ceiling is Gen4 x16 (31.5 GB/s"), std::string::npos);
}

TEST(PcieProbe, ALinkThatReadsUnknownIsNamed) {
  Tree t;
  t.device("pci0000:00/0000:00:01.0", "0x8086", "0x060400", "Unknown", "0", "32.0 GT/s PCIe", "16");
  t.device("pci0000:00/0000:00:01.0/0000:01:00.0", "0x10de", "0x030200", "Unknown", "63",
           "32.0 GT/s PCIe", "16");
  auto w = with(judge_pcie(gather_pcie(t.ctx)), "pcie.link_state_unknown");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].severity, Severity::kWarn);
  EXPECT_NE(w[0].message.find("reads 'Unknown x63'"), std::string::npos) << w[0].message;
}

TEST(PcieProbe, NvSwitchesAndDevicesBehindAHostBridgeInThePath) {
  Tree t;
  t.device("pci0000:00/0000:00:01.0", "0x8086", "0x060400", "16.0 GT/s PCIe", "2", "16.0 GT/s PCIe",
           "2");
  t.device("pci0000:00/0000:00:01.0/0000:05:00.0", "0x10de", "0x068000", "16.0 GT/s PCIe", "2",
           "16.0 GT/s PCIe", "2");
  // A VMD domain: the endpoint's port is the root port behind the second host bridge.
  t.device("pci0000:00/0000:00:0e.0", "0x8086", "0x010400", "", "", "", "");
  t.device("pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0", "0x8086", "0x060400",
           "8.0 GT/s PCIe", "4", "8.0 GT/s PCIe", "4");
  t.device("pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0/10000:e1:00.0", "0x8086", "0x020000",
           "8.0 GT/s PCIe", "4", "8.0 GT/s PCIe", "4");
  PcieFacts f = gather_pcie(t.ctx);
  EXPECT_EQ(dev(f, "0000:05:00.0").role, PciRole::kNvSwitch);
  EXPECT_EQ(dev(f, "10000:e1:00.0").parent, "10000:e0:1d.0");
  EXPECT_EQ(dev(f, "10000:e0:1d.0").port, PciPort::kRootPort);
  EXPECT_FALSE(present(f, "0000:00:0e.0"));
  EXPECT_EQ(worse_than_info(judge_pcie(f)), 0);
}

TEST(PcieProbe, NoPciTreeAndDevicesWithoutLinkFilesAreFactsNotFaults) {
  Tree empty;
  auto fs = judge_pcie(gather_pcie(empty.ctx));
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "pcie.not_captured");
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
  // A VM's virtio NIC on the root bus: conventional PCI, no link attributes (this VM's case).
  Tree vm;
  vm.device("pci0000:00/0000:00:03.0", "0x1af4", "0x020000", "", "", "", "");
  auto vfs = judge_pcie(gather_pcie(vm.ctx));
  EXPECT_EQ(worse_than_info(vfs), 0);
  auto nl = with(vfs, "pcie.no_link_info");
  ASSERT_EQ(nl.size(), 1u);
  EXPECT_NE(nl[0].message.find("NIC 0000:00:03.0"), std::string::npos);
}

TEST(PcieProbe, ParsesTheKernelsAerFiles) {
  auto c = parse_aer_counters("RxErr 3\nBadTLP 0\nTOTAL_ERR_COR 3\n");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->total, 3u);
  EXPECT_EQ(c->by_name.at("RxErr"), 3u);
  // Bits the kernel has no name for print as "<array>_bit[N] count".
  auto b = parse_aer_counters("Undefined 0\ndev_fatal_errs_bit[27] 2\nTOTAL_ERR_FATAL 2\n");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->by_name.at("dev_fatal_errs_bit[27]"), 2u);
  EXPECT_FALSE(parse_aer_counters("RxErr 3\n"));  // no total line
  EXPECT_FALSE(parse_aer_counters("RxErr three\nTOTAL_ERR_COR 3\n"));
  EXPECT_FALSE(parse_aer_counters(""));
}

TEST(PcieProbe, UnparsableAerFileIsAGatherErrorNamingIt) {
  Node n;
  const auto p = n.dir.path() / "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/aer_dev_fatal";
  write_file(p, "garbage\n");
  PcieFacts f = n.gather();
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_NE(f.errors[0].object.find("aer_dev_fatal"), std::string::npos);
  EXPECT_EQ(with(judge_pcie(f), "pcie.gather_error").size(), 1u);
}

// A sysroot is whatever the user points --sysroot at: a byte that is not UTF-8 in a sysfs or
// pci.ids text must come out as U+FFFD, not make the JSON dump throw (nlohmann type_error 316).
TEST(PcieProbe, NonUtf8BytesInTheTreeReachJsonAsReplacementCharacters) {
  Tree t;
  t.device("pci0000:00/0000:00:01.0", "0x8086", "0x060400", "16.0 GT/s PCIe", "16",
           "16.0 GT/s PCIe", "16");
  t.device("pci0000:00/0000:00:01.0/0000:01:00.0", "0x15b3", "0x020000", "16.0 GT/s \xe9 PCIe",
           "16", "16.0 GT/s PCIe", "16");
  const auto d = t.dir.path() / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
  write_file(d / "aer_dev_correctable",
             "Rx\xff"
             "Err 3\nTOTAL_ERR_COR 3\n");
  write_file(t.dir.path() / "usr/share/misc/pci.ids",
             std::string("15b3  Mellanox Technologies \xe9\n\t0001  ConnectX\xff\n"));
  PcieFacts f = gather_pcie(t.ctx);
  std::string text;
  ASSERT_NO_THROW(text = to_json(f).dump());
  EXPECT_NE(text.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD, as UTF-8
  for (const auto& fd : judge_pcie(f)) ASSERT_NO_THROW(Json(fd.message).dump());
}

}  // namespace
}  // namespace fabkit::probes
