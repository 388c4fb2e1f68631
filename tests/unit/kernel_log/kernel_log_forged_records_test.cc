// What a local user can put into the kernel log must not count as a driver's line or drain a node
// (issue #36): driver text quoted inside a record the kernel printed, records written to
// /dev/kmsg, and a well-formed Xid line about a bus with no GPU on this node. Each record below is
// in the format the kernel writes it; the kernel source that writes it is named beside it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "probes/kernel_log/kernel_log_facts.h"
#include "probes/pcie/pcie_facts.h"
#include "slurm/health.h"
#include "tests/support/ttar.h"
#include "tests/unit/kernel_log/kernel_log_test_support.h"

namespace fabkit::probes {
namespace {

using test_support::with;

const std::vector<std::string> kGpus = {"0000:02:00.0", "0000:18:00.0"};

KernelLogFacts scan(const std::string& text, std::optional<std::vector<std::string>> gpus = kGpus) {
  KernelLogFacts f;
  f.readable = true;
  f.gpu_bus_ids = std::move(gpus);
  scan_kernel_log(parse_kernel_log_text(text, &f.format), {}, f);
  return f;
}

std::string warn_or_worse(const std::vector<Finding>& fs) {
  std::string out;
  for (const auto& f : fs)
    if (f.severity != Severity::kInfo) out += f.code + " " + f.subject + ": " + f.message + "\n";
  return out;
}

// The segfault report of arch/x86/mm/fault.c (show_signal_msg): "COMM[PID]: segfault at ADDR ip
// IP sp SP error N", then mm/memory.c print_vma_addr's " in NAME[START+SIZE]" (the basename of
// the faulting mapping: any file a user creates) and, since 6.1, " likely on CPU N (core N, socket
// N)". One record, LOG_KERN, level 6.
std::string segfault(int pid, const std::string& comm, const std::string& file) {
  return comm + "[" + std::to_string(pid) +
         "]: segfault at 0 ip 000055d5c0a0b1c4 sp 00007ffd4c0a3e10 error 4 in " + file +
         "[55d5c0a0b000+1000] likely on CPU 3 (core 3, socket 0)";
}

// What a user makes the kernel print about a program of theirs: file names that are driver lines
// (a file name cannot hold '/', which none of these needs), a process name (comm, 15 bytes) that
// starts like one, and a newline in a file name.
std::vector<std::string> forged_messages() {
  return {
      segfault(4242, "python3",
               "NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=x, GPU has fallen off the bus."),
      segfault(4243, "NVRM: Xid (PCI:", "0000:18:00): 79, GPU has fallen off the bus."),
      segfault(4244, "python3", "x\nNVRM: Xid (PCI:0000:02:00): 48, pid=1, name=x, DBE"),
      segfault(4245, "python3", "NVRM: GPU at PCI:0000:18:00 has fallen off the bus."),
      segfault(4246, "NVRM: GPU 0000:", "18:00.0: GPU has fallen off the bus."),
      segfault(4247, "python3", "NVRM: The NVIDIA GPU 0000:02:00.0 has fallen off the bus"),
      segfault(4248, "python3",
               "pcieport 0000:00:02.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=x"),
      segfault(4249, "python3", "pcieport 0000:00:02.0: AER: device recovery failed"),
      segfault(4250, "python3",
               "mlx5_core 0000:19:00.0: poll_health:825: device's health compromised"),
      segfault(4251, "eth0: Link down", "libc.so.6"),
      segfault(4252, "python3", "bond0: link status definitely down for interface eno50"),
      segfault(4253, "mlx5_0: Port: 1", "Link DOWN"),
  };
}

// /dev/kmsg escapes every byte below 0x20 (a newline among them) as \xNN.
std::string kmsg_escaped(const std::string& m) {
  std::string out;
  for (char c : m) {
    if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned char>(c));
      out += b;
    } else {
      out += c;
    }
  }
  return out;
}

TEST(KernelLogForgedRecords, DriverTextQuotedInsideAKernelRecordCountsForNothing) {
  std::string kmsg, dmesg;
  int seq = 1200;
  for (const auto& m : forged_messages()) {
    kmsg += "6," + std::to_string(seq) + ",5000000,-;" + kmsg_escaped(m) + "\n";
    // util-linux dmesg indents a record's later lines under its first.
    std::string indented;
    for (char c : m) indented += c == '\n' ? std::string("\n               ") : std::string(1, c);
    dmesg += "[    5.000000] " + indented + "\n";
    ++seq;
  }
  for (const auto& [text, format] : {std::pair{kmsg, "kmsg"}, std::pair{dmesg, "dmesg"}}) {
    auto f = scan(text);
    EXPECT_EQ(f.format, format);
    EXPECT_EQ(f.records, forged_messages().size()) << format;
    EXPECT_TRUE(f.xids.empty()) << format << ": " << f.xids[0].sample;
    EXPECT_TRUE(f.events.empty()) << format << ": " << f.events[0].kind << " "
                                  << f.events[0].sample;
    EXPECT_EQ(warn_or_worse(judge_kernel_log(f)), "") << format;
  }
}

// kernel/printk/printk.c devkmsg_write: a write to /dev/kmsg gets facility LOG_USER (1), or the
// one a "<N>" prefix names, but never LOG_KERN (0) ("to be able to reliably distinguish
// kernel-generated messages from userspace-injected ones"); /dev/kmsg reads give the record's
// prio as (facility << 3) | level.
TEST(KernelLogForgedRecords, RecordsUserSpaceWroteToDevKmsgCountForNothing) {
  const std::string written =
      // echo 'NVRM: ...' > /dev/kmsg: LOG_USER at the default level 4
      "12,1300,6000000,-;NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n"
      // '<3>pcieport ...': a level without a facility is still LOG_USER
      "11,1301,6000001,-;pcieport 0000:00:02.0: PCIe Bus Error: severity=Uncorrected (Fatal), "
      "type=Transaction Layer, (Receiver ID)\n"
      "11,1302,6000002,-;pcieport 0000:00:02.0: AER: device recovery failed\n"
      // '<187>': local7.err
      "187,1303,6000003,-;mlx5_core 0000:19:00.0: poll_health:825: device's health compromised "
      "- reached miss count\n"
      // '<30>': daemon.info
      "30,1304,6000004,-;NVRM: GPU at PCI:0000:02:00 has fallen off the bus.\n"
      "12,1305,6000005,-;mlx5_core 0000:42:00.1 eth4: Link down\n";
  auto f = scan(written);
  EXPECT_EQ(f.format, "kmsg");
  EXPECT_EQ(f.user_space_records, 6u);
  EXPECT_TRUE(f.xids.empty());
  EXPECT_TRUE(f.events.empty());
  auto fs = judge_kernel_log(f);
  EXPECT_EQ(warn_or_worse(fs), "");
  EXPECT_NE(with(fs, "kernel_log.read")[0].message.find("6 record(s) written by user space"),
            std::string::npos);

  // The same Xid as the kernel prints it (LOG_KERN, level 4) still drains.
  auto k = scan(written +
                "4,1306,6000006,-;NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off "
                "the bus.\n");
  ASSERT_EQ(k.xids.size(), 1u);
  EXPECT_EQ(with(judge_kernel_log(k), "kernel_log.xid_drain").size(), 1u);

  // Text copies that keep the origin: dmesg -r's raw prio, dmesg -x's facility name, a syslog
  // tag other than "kernel".
  auto t = scan(
      "<12>[    6.000005] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.\n"
      "user  :warn  : [    6.000006] NVRM: Xid (PCI:0000:02:00): 48, pid=1, name=x, DBE\n"
      "May 18 19:02:39 node7 logger: NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.\n"
      "<4>[    6.000007] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus.\n"
      "kern  :warn  : [    6.000008] NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=x, DBE\n"
      "May 18 19:02:40 node7 kernel: NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=x, SM\n");
  EXPECT_EQ(t.user_space_records, 3u);
  ASSERT_EQ(t.xids.size(), 3u);
  for (const auto& x : t.xids) EXPECT_EQ(x.bus_id, "0000:18:00.0") << x.sample;

  uint64_t seq = 0;
  auto user = parse_kmsg_record("14,7,1,-;hello\n", &seq);
  ASSERT_TRUE(user);
  EXPECT_EQ(user->facility, 1);
  EXPECT_EQ(parse_kmsg_record("6,8,1,-,caller=T291;hello\n")->facility, 0);
}

TEST(KernelLogForgedRecords, AnXidOnABusWithNoNvidiaDeviceHereSaysSoAndDoesNotDrain) {
  const std::string log =
      "4,1,1000000,-;NVRM: Xid (PCI:0000:03:00): 79, pid=1, name=a, GPU has fallen off the bus.\n"
      "4,2,2000000,-;NVRM: GPU at PCI:0000:04:00 has fallen off the bus.\n"
      "4,3,3000000,-;NVRM: Xid (PCI:0000:03:00): 45, pid=1, name=a, Ch 00000001\n"
      "4,4,4000000,-;NVRM: Xid (PCI:0000:18:00): 48, pid=2, name=b, DBE (0x00000001)\n";
  auto f = scan(log);
  auto fs = judge_kernel_log(f);
  auto drains = with(fs, "kernel_log.xid_drain");
  ASSERT_EQ(drains.size(), 1u);  // the GPU that is here
  EXPECT_EQ(drains[0].subject, "Xid 48 0000:18:00.0");
  EXPECT_TRUE(with(fs, "kernel_log.gpu_off_bus").empty());
  auto other = with(fs, "kernel_log.not_a_gpu");
  ASSERT_EQ(other.size(), 3u);
  EXPECT_EQ(other[0].subject, "Xid 79 0000:03:00.0");
  EXPECT_EQ(other[0].severity, Severity::kWarn);
  EXPECT_NE(other[0].message.find("0000:03:00.0 is not a GPU on this node: not draining on it"),
            std::string::npos)
      << other[0].message;
  EXPECT_EQ(other[1].subject, "Xid 45 0000:03:00.0");
  EXPECT_EQ(other[1].severity, Severity::kInfo);  // informational wherever it is
  EXPECT_EQ(other[2].subject, "0000:04:00.0");
  EXPECT_EQ(other[2].severity, Severity::kWarn);
  EXPECT_NE(other[2].message.find("0000:04:00.0 is not a GPU on this node"), std::string::npos);
  EXPECT_NE(with(fs, "kernel_log.read")[0].message.find("(1 needing a drain)"), std::string::npos);
  Json j = to_json(f);
  EXPECT_EQ(j["gpu_bus_ids"], Json(kGpus));
  for (const auto& x : j["xids"]) EXPECT_EQ(x["on_gpu"], x["bus_id"] == "0000:18:00.0");

  // Without the node's PCI devices no bus is known to hold a GPU: nothing drains, and it says so.
  auto u = scan(log, std::nullopt);
  auto ufs = judge_kernel_log(u);
  for (const auto& x : ufs) EXPECT_NE(x.severity, Severity::kFail) << x.code << " " << x.message;
  auto unknown = with(ufs, "kernel_log.not_a_gpu");
  ASSERT_EQ(unknown.size(), 4u);
  EXPECT_NE(unknown[0].message.find("the PCI devices of this node could not be listed"),
            std::string::npos);
  EXPECT_TRUE(to_json(u)["gpu_bus_ids"].is_null());
  EXPECT_TRUE(to_json(u)["xids"][0]["on_gpu"].is_null());
}

// The node as `fabcheck node --slurm-health` sees it: the PCI tree of tests/fixtures/pcie (GPUs
// at 0000:02:00.0 and 0000:18:00.0, an NVMe drive at 0000:03:00.0) and its kernel log.
slurm::HealthDecision health_of_node_with_log(const std::string& log) {
  testing::TempDir dir("kernel_log_forged");
  const auto fx = testing::project_fixtures();
  for (const char* t : {"sysfs_gpu_node.ttar", "pci_ids_excerpt.ttar"})
    testing::unpack_ttar(fx / "pcie" / t, dir.path(), "");
  testing::write_file(dir.path() / "dev/kmsg", log);
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  auto pcie = gather_pcie(ctx);
  auto klog = gather_kernel_log(ctx, {device_names(pcie), nvidia_gpu_bus_ids(pcie)});
  Report r;
  r.kind = "node";
  r.findings = judge_kernel_log(klog);
  return slurm::decide_health(r, "gpu-07");
}

TEST(KernelLogForgedRecords, ForgedRecordsDoNotDrainTheNodeAndTheDriversXidStillDoes) {
  std::string forged;
  int seq = 10;
  for (const auto& m : forged_messages())
    forged += "6," + std::to_string(seq++) + ",5000000,-;" + kmsg_escaped(m) + "\n";
  forged +=
      "12,30,6000000,-;NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.\n"
      "4,31,7000000,-;NVRM: Xid (PCI:0000:03:00): 79, GPU has fallen off the bus.\n";
  auto d = health_of_node_with_log(forged);
  EXPECT_FALSE(d.drain) << d.reason;

  // wilicc/gpu-burn#1's real lines: the GPU at 0000:02:00.0 fell off the bus.
  std::ifstream in(testing::project_fixtures() / "kernel_log" / "dmesg_aer_fatal_xid79.txt");
  std::stringstream real;
  real << in.rdbuf();
  auto r = health_of_node_with_log(real.str());
  EXPECT_TRUE(r.drain);
  EXPECT_EQ(r.reason, "fabcheck: kernel_log.xid_drain Xid 79 0000:02:00.0 (+1 more)");
}

}  // namespace
}  // namespace fabkit::probes
