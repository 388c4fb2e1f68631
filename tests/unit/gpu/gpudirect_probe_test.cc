#include <gtest/gtest.h>

#include "probes/gpudirect/gpudirect_facts.h"
#include "tests/support/ttar.h"
#include "topo/topology_file.h"

namespace fabkit::probes {

std::string config_blob(std::vector<std::pair<size_t, uint32_t>> dwords);  // acs_config_test.cc
uint32_t ext_header(uint16_t id, uint8_t version, uint16_t next);

namespace {

topo::Topology k40_and_cx4() {
  // hwloc's 32em64t export: K40m 84:00.0 and ConnectX-4 04:00.0 under root port 80:03.0.
  return topo::load_topology_file(testing::project_fixtures() /
                                  "real/hwloc/hwloc_32em64t-2n8c2t-pci-normalio.v2format.xml")
      .topology;
}

int count(const std::vector<Finding>& fs, const std::string& code, Severity s) {
  int n = 0;
  for (const auto& f : fs) n += f.code == code && f.severity == s;
  return n;
}

struct Tree {
  testing::TempDir dir{"gpudirect"};
  ProbeContext ctx;
  Tree() { ctx.roots = SystemRoots::under(dir.path()); }
  void put(const std::string& rel, const std::string& text) {
    testing::write_file(dir.path() / rel, text);
  }
};

TEST(GpuDirectProbe, NotApplicableWithoutGpusOrHcas) {
  Tree t;
  GpuDirectFacts none = gather_gpudirect(t.ctx, nullptr, 0);
  EXPECT_FALSE(none.applicable);
  auto fs = judge_gpudirect(none);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "gpudirect.not_applicable");
  topo::Topology cpu_only;
  GpuDirectFacts f = gather_gpudirect(t.ctx, &cpu_only, 2);
  EXPECT_FALSE(f.applicable);
  EXPECT_NE(f.reason.find("0 GPU(s) and 2 RDMA HCA(s)"), std::string::npos);
  EXPECT_EQ(to_json(f)["applicable"], false);
}

TEST(GpuDirectProbe, FixtureNodeWithEveryProblem) {
  Tree t;
  t.put("proc/modules", "mlx5_ib 450560 0 - Live 0x0\nnvidia 56623104 2 - Live 0x0\n");
  t.put("proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
        "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
  t.put("proc/sys/kernel/osrelease", "5.15.0-91-generic\n");
  t.put("proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on\n");
  std::filesystem::create_directories(t.dir.path() / "sys/class/iommu/dmar0");
  const std::string dev = "sys/bus/pci/devices/";
  t.put(dev + "0000:80:03.0/config",
        config_blob({{0x100, ext_header(0x000d, 1, 0)}, {0x104, 0x001d007fu}}));
  t.put(dev + "0000:80:02.0/config", std::string(64, '\x86'));  // unprivileged read
  t.put(dev + "0000:84:00.0/iommu_group/type", "DMA\n");

  topo::Topology topo = k40_and_cx4();
  GpuDirectFacts f = gather_gpudirect(t.ctx, &topo, 1);
  ASSERT_TRUE(f.applicable);
  EXPECT_EQ(f.gpu_count, 4);
  EXPECT_EQ(f.hca_count, 1);
  EXPECT_TRUE(f.peer_modules.empty());
  auto fs = judge_gpudirect(f);
  EXPECT_EQ(count(fs, "gpudirect.peermem_missing", Severity::kWarn), 1);
  EXPECT_EQ(count(fs, "gpudirect.acs_redirect", Severity::kWarn), 1);
  // Unknown: 80:02.0 (short read) on 83:00.0's path, 00:03.0 (no config file) on 03:00.0's.
  EXPECT_EQ(count(fs, "gpudirect.acs_unknown", Severity::kInfo), 2);
  EXPECT_EQ(count(fs, "gpudirect.iommu_translated", Severity::kWarn), 1);
  EXPECT_EQ(count(fs, "gpudirect.dmabuf", Severity::kInfo), 1);  // proprietary module: not possible
  for (const auto& x : fs) {
    if (x.code == "gpudirect.acs_redirect") {
      EXPECT_EQ(x.subject, "0000:80:03.0");
      EXPECT_NE(x.fix.find("setpci -s 0000:80:03.0 ECAP_ACS+6.w=0000"), std::string::npos);
    }
    if (x.code == "gpudirect.acs_unknown") {
      EXPECT_TRUE(x.subject == "0000:80:02.0" || x.subject == "0000:00:03.0") << x.subject;
      if (x.subject == "0000:80:02.0") EXPECT_NE(x.message.find("64 bytes"), std::string::npos);
    }
    if (x.code == "gpudirect.peermem_missing")
      EXPECT_NE(x.fix.find("modprobe nvidia_peermem"), std::string::npos);
    if (x.code == "gpudirect.iommu_translated")
      EXPECT_NE(x.fix.find("iommu=pt"), std::string::npos);
  }
  Json j = to_json(f);
  EXPECT_EQ(j["dmabuf_possible"], false);
  EXPECT_EQ(j["iommu_mode"], "translated");
  EXPECT_EQ(j["nvidia_driver_major"], 535);
  bool saw_redirect = false;
  for (const auto& a : j["acs"])
    saw_redirect |= a["bridge"] == "0000:80:03.0" && a["state"] == "redirecting";
  EXPECT_TRUE(saw_redirect);
}

TEST(GpuDirectProbe, HealthyNode) {
  Tree t;
  t.put("proc/modules",
        "nvidia_peermem 16384 0 - Live 0x0\nnvidia 56623104 2 nvidia_peermem, Live 0x0\n");
  t.put("proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  "
        "(dvs-builder@U16)\n");
  t.put("proc/sys/kernel/osrelease", "6.5.0-1018-azure\n");
  t.put("proc/cmdline", "root=/dev/sda1 iommu=pt\n");
  const std::string dev = "sys/bus/pci/devices/";
  for (const char* b : {"0000:80:03.0", "0000:80:02.0", "0000:00:03.0"})
    t.put(dev + b + "/config",
          config_blob({{0x100, ext_header(0x000d, 1, 0)}, {0x104, 0x0000007fu}}));
  topo::Topology topo = k40_and_cx4();
  GpuDirectFacts f = gather_gpudirect(t.ctx, &topo, 0);
  auto fs = judge_gpudirect(f);
  EXPECT_EQ(worst_severity(fs), Severity::kInfo);
  EXPECT_EQ(f.peer_modules, std::vector<std::string>{"nvidia_peermem"});
  EXPECT_EQ(dmabuf_possible(f), true);
  EXPECT_EQ(iommu_mode(f), "passthrough");
}

TEST(GpuDirectJudge, DmabufMakesMissingPeermemInfo) {
  GpuDirectFacts f;
  f.applicable = true;
  f.modules_readable = true;
  f.kernel_release = "6.8.0";
  f.nvidia_version_line =
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build";
  auto fs = judge_gpudirect(f);
  EXPECT_EQ(count(fs, "gpudirect.peermem_missing", Severity::kInfo), 1);
  f.kernel_release = "5.4.0-150-generic";
  EXPECT_EQ(count(judge_gpudirect(f), "gpudirect.peermem_missing", Severity::kWarn), 1);
  f.modules_readable = false;
  EXPECT_EQ(count(judge_gpudirect(f), "gpudirect.modules_unknown", Severity::kInfo), 1);
  f.nvidia_version_line.reset();
  EXPECT_EQ(count(judge_gpudirect(f), "gpudirect.driver_unknown", Severity::kInfo), 1);
}

TEST(GpuDirectJudge, Parsers) {
  NvidiaDriver d =
      parse_nvidia_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  Wed Oct 27");
  EXPECT_EQ(d.major, 470);
  EXPECT_FALSE(d.open_kernel_module);
  EXPECT_FALSE(parse_nvidia_version("garbage").major);
  EXPECT_EQ(parse_kernel_version("5.12.0"), std::make_pair(5, 12));
  EXPECT_FALSE(parse_kernel_version("linux"));
  GpuDirectFacts f;
  f.cmdline = "quiet amd_iommu=off";
  EXPECT_EQ(iommu_mode(f), "off");
  f.cmdline = "quiet xiommu=pt";  // not the token iommu=pt
  f.iommu_units = {"ivhd0"};
  EXPECT_EQ(iommu_mode(f), "unknown");
}

}  // namespace
}  // namespace fabkit::probes
