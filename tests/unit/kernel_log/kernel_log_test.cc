// The kernel log probe on real log lines (tests/fixtures/kernel_log/README.md names where each
// comes from) and on this machine's /dev/kmsg.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "common/file_reader.h"
#include "probes/kernel_log/kernel_log_facts.h"
#include "tests/support/ttar.h"
#include "tests/unit/kernel_log/kernel_log_test_support.h"

namespace fabkit::probes {
namespace {

using test_support::fixture_text;
using test_support::with;

// gpus: the GPUs on the node's PCI bus, which an Xid line must name to count toward a drain.
KernelLogFacts scan_fixture(const std::string& name,
                            const std::map<std::string, std::string>& names = {},
                            std::optional<std::vector<std::string>> gpus = std::nullopt) {
  KernelLogFacts f;
  f.readable = true;
  f.gpu_bus_ids = std::move(gpus);
  auto records = parse_kernel_log_text(fixture_text(name), &f.format);
  scan_kernel_log(records, names, f);
  return f;
}

KernelLogFacts scan_fixture_text(const std::string& text) {
  KernelLogFacts f;
  f.readable = true;
  scan_kernel_log(parse_kernel_log_text(text, &f.format), {}, f);
  return f;
}

const XidGroup* xid(const KernelLogFacts& f, int code, const std::string& bus) {
  for (const auto& g : f.xids)
    if (g.xid == code && g.bus_id == bus) return &g;
  return nullptr;
}

const LogEventGroup* event(const KernelLogFacts& f, const std::string& kind,
                           const std::string& dev) {
  for (const auto& e : f.events)
    if (e.kind == kind && e.device == dev) return &e;
  return nullptr;
}

TEST(KernelLog, ParsesKmsgRecordsAsTheAbiDocumentShowsThem) {
  // Documentation/ABI/testing/dev-kmsg's example record, with its dictionary lines.
  uint64_t seq = 0;
  auto r = parse_kmsg_record(
      "7,160,424069,-;pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)\n"
      " SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A03:00\n",
      &seq);
  ASSERT_TRUE(r);
  EXPECT_EQ(seq, 160u);
  ASSERT_TRUE(r->time_s);
  EXPECT_DOUBLE_EQ(*r->time_s, 0.424069);
  EXPECT_EQ(r->message, "pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)");
  // A multi-line record arrives with its newlines escaped.
  auto m = parse_kmsg_record(
      "3,5,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0aNVRM: fallen off the bus\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->message, "NVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: fallen off the bus");
  EXPECT_FALSE(parse_kmsg_record("[  1.0] not a record"));
  EXPECT_FALSE(parse_kmsg_record("a,b,c,-;x"));
  // A file of records, as `dd if=/dev/kmsg iflag=nonblock` writes it.
  std::string format;
  auto rs = parse_kernel_log_text(
      "6,1,0,-;Linux version 6.1\n SUBSYSTEM=x\n4,2,1500000,-;NVRM: Xid (PCI:0000:18:00): 79, GPU "
      "has "
      "fallen off the bus.\n",
      &format);
  EXPECT_EQ(format, "kmsg");
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_DOUBLE_EQ(*rs[1].time_s, 1.5);
}

// Log lines are bytes: a driver can print any byte, and /dev/kmsg escapes only the
// non-printable ones as \xNN (which unescape back to the raw byte). The fuzzer found a Latin-1
// byte in an Xid line's process name making the JSON dump throw (nlohmann type_error 316).
TEST(KernelLog, BytesThatAreNotUtf8ReachJsonAsReplacementCharacters) {
  const std::string text =
      "[ 10.0] NVRM: Xid (PCI:0000:18:00): 13, pid=42, name=tr\xe9"
      "ner, Graphics Exception\n"
      "4,2,11000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=43, name=\\xff, GPU has fallen off "
      "the bus.\n"
      "[ 12.0] mlx5_core 0000:3b:00.0: \xc3(\x80 cmd_work_handler:877:(pid 1): cmd[0]: "
      "timeout\n";
  KernelLogFacts f;
  f.readable = true;
  scan_kernel_log(parse_kernel_log_text(text, nullptr), {{"0000:18:00.0", "GPU 0000:18:00.0"}}, f);
  ASSERT_EQ(f.xids.size(), 2u);
  std::string out;
  ASSERT_NO_THROW(out = to_json(f).dump());
  EXPECT_NE(out.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD, as UTF-8
  for (const auto& fd : judge_kernel_log(f)) ASSERT_NO_THROW(Json(fd.message).dump());
  // A long line's sample is cut to ~300 bytes: never inside a character (a three-byte one here,
  // at three offsets so one of them would straddle the cut).
  std::string euros;
  for (int i = 0; i < 150; ++i) euros += "\xe2\x82\xac";
  std::string long_lines;
  for (const char* pad : {"", " ", "  "})
    long_lines += std::string("[ 13.0] mlx5_core 0000:3b:00.0: cmd_work_handler:877:(pid 1): ") +
                  pad + "cmd[0]: timeout " + euros + "\n" +
                  "[ 13.0] NVRM: Xid (PCI:0000:18:00): " + "13, " + pad + euros + "\n";
  KernelLogFacts g;
  g.readable = true;
  scan_kernel_log(parse_kernel_log_text(long_lines, nullptr), {}, g);
  ASSERT_NO_THROW(to_json(g).dump());
}

TEST(KernelLog, ReadsEveryDmesgTextFormatTheFixturesHold) {
  std::string format;
  auto rs = parse_kernel_log_text(fixture_text("dmesg_aer_fatal_xid79.txt"), &format);
  EXPECT_EQ(format, "dmesg");
  ASSERT_EQ(rs.size(), 13u);
  EXPECT_DOUBLE_EQ(*rs[0].time_s, 74785.660366);
  EXPECT_EQ(rs[12].message, "NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.");
  auto x = parse_kernel_log_text(fixture_text("xid_formats.txt"), &format);
  // dmesg -T stamps and journal lines carry no time since boot; the indented lines of the
  // NVSentinel#155 record join the record above them.
  size_t multi = 0, untimed = 0;
  for (const auto& r : x) {
    untimed += !r.time_s;
    if (r.message.find("fallen off the bus and is not responding") != std::string::npos) {
      ++multi;
      EXPECT_EQ(r.message.substr(0, 33), "NVRM: The NVIDIA GPU 0000:b3:00.0");
      EXPECT_DOUBLE_EQ(*r.time_s, 1843.308145);
    }
  }
  EXPECT_EQ(multi, 1u);
  EXPECT_EQ(x.size(), 19u);
  EXPECT_EQ(untimed, 13u);
  auto n = parse_kernel_log_text(fixture_text("nic_aer_link_lines.txt"), &format);
  // pdsh's "host: " prefix, journal prefixes, relative and caller-id stamps.
  EXPECT_EQ(n[0].message.substr(0, 24), "mlx5_core 0000:61:00.0: ");
  EXPECT_DOUBLE_EQ(*n[0].time_s, 14280.445220);
  EXPECT_EQ(n[4].message, "mlx5_core 0000:01:00.1 eth1: Link up");
  EXPECT_FALSE(n[8].time_s);  // "[  +0.000001]" is a delta
  EXPECT_EQ(n.back().message, "pcieport 0000:00:00.0:    [ 0] RxErr                  (First)");
  EXPECT_DOUBLE_EQ(*n.back().time_s, 36.802536);
  // journalctl -k -o short-monotonic puts the host and "kernel:" after the stamp.
  auto j = parse_kernel_log_text("[ 1234.567890] node7 kernel: pcieport 0000:00:02.0: AER: x\n",
                                 &format);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0].message, "pcieport 0000:00:02.0: AER: x");
  EXPECT_DOUBLE_EQ(*j[0].time_s, 1234.56789);
  // A bracket in a message without a stamp is no stamp ("[drm:...]").
  auto d = parse_kernel_log_text(
      "Sep 22 09:59:09 pve kernel: [drm:amdgpu_job_timedout [amdgpu]] *ERROR* x\n", &format);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].message, "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* x");
}

// wilicc/gpu-burn#1: a correctable replay timeout, then a fatal Surprise Down on the root port
// and the GPU below it falling off the bus.
TEST(KernelLog, FatalAerThenXid79IsTwoFailsNamedByThePciFacts) {
  auto f = scan_fixture(
      "dmesg_aer_fatal_xid79.txt",
      {{"0000:02:00.0",
        "GPU 0000:02:00.0 (NVIDIA Corporation GH100[H100 SXM5 80GB], "
        "driver nvidia)"},
       {"0000:00:02.0", "root port 0000:00:02.0 (Intel Corporation, driver pcieport)"}},
      std::vector<std::string>{"0000:02:00.0"});
  ASSERT_EQ(f.xids.size(), 1u);
  const XidGroup& g = f.xids[0];
  EXPECT_EQ(g.xid, 79);
  EXPECT_EQ(g.bus_id, "0000:02:00.0");
  EXPECT_EQ(g.cls, XidClass::kDrain);
  EXPECT_DOUBLE_EQ(*g.first_s, 74889.644138);
  const auto* fatal = event(f, "aer_fatal", "0000:00:02.0");
  ASSERT_TRUE(fatal);
  EXPECT_EQ(fatal->count, 1);
  EXPECT_EQ(fatal->details, std::vector<std::string>{"Surprise Down Error"});
  const auto* cor = event(f, "aer_correctable", "0000:00:02.0");
  ASSERT_TRUE(cor);
  EXPECT_EQ(cor->details, std::vector<std::string>{"Replay Timer Timeout"});
  auto fs = judge_kernel_log(f);
  auto x = with(fs, "kernel_log.xid_drain");
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0].severity, Severity::kFail);
  EXPECT_EQ(x[0].subject, "Xid 79 0000:02:00.0");
  EXPECT_NE(x[0].message.find("Xid 79 (GPU has fallen off the bus) on GPU 0000:02:00.0 (NVIDIA "
                              "Corporation GH100[H100 SXM5 80GB], driver nvidia): 1 time, at "
                              "74889.6 s after boot"),
            std::string::npos)
      << x[0].message;
  EXPECT_NE(x[0].fix.find("power-cycle"), std::string::npos);
  auto a = with(fs, "kernel_log.aer_fatal");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].severity, Severity::kFail);
  EXPECT_NE(a[0].message.find("root port 0000:00:02.0 (Intel Corporation, driver pcieport) "
                              "(Surprise Down Error)"),
            std::string::npos)
      << a[0].message;
  EXPECT_EQ(with(fs, "kernel_log.aer_correctable")[0].severity, Severity::kInfo);
}

TEST(KernelLog, XidFormatsAcrossDriverVersionsAndTheirClasses) {
  // The GPUs the lines name, on the PCI bus of the node the log is judged for.
  auto f = scan_fixture("xid_formats.txt", {},
                        std::vector<std::string>{"0000:2b:00.0", "0000:cb:00.0", "0000:dc:00.0",
                                                 "0000:ed:00.0", "0009:01:00.0", "0019:01:00.0",
                                                 "0018:01:00.0", "0000:10:1c.0", "0000:b3:00.0"});
  // Journal line without a PCI: function; the repeat "GPU ... has fallen off the bus" adds nothing.
  ASSERT_TRUE(xid(f, 79, "0000:2b:00.0"));
  EXPECT_FALSE(event(f, "gpu_off_bus", "0000:2b:00.0"));
  const auto* x13 = xid(f, 13, "0000:cb:00.0");
  ASSERT_TRUE(x13);
  EXPECT_EQ(x13->count, 3);
  EXPECT_EQ(x13->cls, XidClass::kApplication);
  EXPECT_TRUE(x13->processes.empty());  // name=<unknown>
  const auto* x109 = xid(f, 109, "0000:cb:00.0");
  ASSERT_TRUE(x109);
  EXPECT_EQ(x109->processes, std::vector<std::string>{"pt_main_thread"});
  EXPECT_EQ(x109->cls, XidClass::kDrain);
  EXPECT_EQ(xid(f, 45, "0000:dc:00.0")->cls, XidClass::kInformational);
  EXPECT_EQ(xid(f, 43, "0009:01:00.0")->processes, std::vector<std::string>{"trigger_xid"});
  EXPECT_EQ(xid(f, 149, "0019:01:00.0")->cls, XidClass::kDrain);          // "NETIR Fatal"
  EXPECT_EQ(xid(f, 145, "0018:01:00.0")->cls, XidClass::kInformational);  // "Nonfatal"
  EXPECT_EQ(xid(f, 149, "0009:01:00.0")->cls, XidClass::kDrain);
  const auto* x154 = xid(f, 154, "0019:01:00.0");
  ASSERT_TRUE(x154);
  EXPECT_EQ(x154->recovery_action, "GPU Reset Required");
  EXPECT_EQ(x154->cls, XidClass::kDrain);
  EXPECT_EQ(xid(f, 154, "0009:01:00.0")->recovery_action, "Drain and Reset");
  EXPECT_EQ(xid(f, 63, "0000:10:1c.0")->cls, XidClass::kDrain);
  const auto* off = event(f, "gpu_off_bus", "0000:b3:00.0");
  ASSERT_TRUE(off);
  EXPECT_DOUBLE_EQ(*off->first_s, 1843.308145);
  EXPECT_EQ(f.xids.size(), 12u);
  EXPECT_EQ(f.events.size(), 1u);  // the nvidia-peermem ERROR line is no event
  auto fs = judge_kernel_log(f);
  EXPECT_EQ(with(fs, "kernel_log.xid_drain").size(), 7u);          // 79, 109, 149 x2, 154 x2, 63
  EXPECT_EQ(with(fs, "kernel_log.xid_application").size(), 2u);    // 13, 43
  EXPECT_EQ(with(fs, "kernel_log.xid_informational").size(), 3u);  // 45 x2, 145 Nonfatal
  EXPECT_EQ(with(fs, "kernel_log.gpu_off_bus").size(), 1u);
  auto x154f = with(fs, "kernel_log.xid_drain");
  bool named = false;
  for (const auto& x : x154f)
    named = named || x.message.find("recovery action: GPU Reset Required") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(KernelLog, Xid154BackToNoneClearsTheDrain) {
  KernelLogFacts f;
  f.readable = true;
  f.gpu_bus_ids = std::vector<std::string>{"0000:18:00.0"};
  scan_kernel_log({{1.0,
                    "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 "
                    "(None) to 0x1 (GPU Reset Required)"},
                   {2.0,
                    "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x1 "
                    "(GPU Reset Required) to 0x0 (None)"}},
                  {}, f);
  ASSERT_EQ(f.xids.size(), 1u);
  EXPECT_EQ(f.xids[0].cls, XidClass::kInformational);
  EXPECT_EQ(f.xids[0].count, 2);
  EXPECT_EQ(with(judge_kernel_log(f), "kernel_log.xid_informational").size(), 1u);
}

TEST(KernelLog, RepeatedGspTimeoutsAreOneGroupWithTheirProcesses) {
  auto f =
      scan_fixture("gpud_dmesg_ctime_xid119.txt", {}, std::vector<std::string>{"0000:9b:00.0"});
  ASSERT_EQ(f.xids.size(), 1u);
  EXPECT_EQ(f.xids[0].xid, 119);
  EXPECT_EQ(f.xids[0].count, 5);
  EXPECT_EQ(f.xids[0].processes,
            (std::vector<std::string>{"nvidia-smi", "cache_mgr_main", "gpud"}));
  EXPECT_EQ(f.events.size(), 0u);  // stack traces and the rate-limit note are no events
  EXPECT_EQ(f.untimed_records, f.records);
  auto fs = judge_kernel_log(f);
  auto x = with(fs, "kernel_log.xid_drain");
  ASSERT_EQ(x.size(), 1u);
  EXPECT_NE(x[0].message.find("5 times, at an unknown time"), std::string::npos) << x[0].message;
}

TEST(KernelLog, NicAerAndLinkLines) {
  auto f = scan_fixture("nic_aer_link_lines.txt");
  const auto* cmd = event(f, "mlx5_cmd_timeout", "0000:61:00.0");
  ASSERT_TRUE(cmd);
  EXPECT_EQ(cmd->count, 2);
  const auto* down = event(f, "link_down", "0000:42:00.1");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->ups_after_last_down, 1);
  EXPECT_TRUE(event(f, "link_down", "eno50"));
  EXPECT_FALSE(event(f, "link_down", "0000:01:00.1"));  // only "Link up"
  EXPECT_FALSE(event(f, "link_down", "0000:ab:00.0"));  // Link INIT / ACTIVE
  const auto* fatal = event(f, "aer_fatal", "0000:00:03.0");
  ASSERT_TRUE(fatal);
  EXPECT_EQ(fatal->details, (std::vector<std::string>{"SDES", "CmpltTO"}));
  EXPECT_TRUE(event(f, "aer_recovery_failed", "0000:00:03.0"));
  const auto* nonfatal = event(f, "aer_nonfatal", "0000:80:1b.4");
  ASSERT_TRUE(nonfatal);
  EXPECT_EQ(nonfatal->details, std::vector<std::string>{"ACSViol"});
  EXPECT_EQ(event(f, "aer_correctable", "0000:00:00.0")->details,
            std::vector<std::string>{"RxErr"});
  auto fs = judge_kernel_log(f);
  EXPECT_EQ(with(fs, "kernel_log.mlx5_cmd_timeout")[0].severity, Severity::kWarn);
  EXPECT_EQ(with(fs, "kernel_log.aer_recovery_failed")[0].severity, Severity::kFail);
  EXPECT_EQ(with(fs, "kernel_log.aer_nonfatal")[0].severity, Severity::kWarn);
  auto links = with(fs, "kernel_log.link_down");
  ASSERT_EQ(links.size(), 2u);
  EXPECT_NE(links[0].message.find("came back up"), std::string::npos) << links[0].message;
  EXPECT_NE(links[1].message.find("may still be down"), std::string::npos) << links[1].message;
}

// A soft-RoCE node's ordinary lines (rdma_rxe loading, each device set active over its netdev) are
// no event and no finding.
TEST(KernelLog, SoftRoceLinesAreNoFault) {
  auto f = scan_fixture("rxe_lines.txt");
  EXPECT_TRUE(f.events.empty());
  EXPECT_TRUE(f.xids.empty());
  for (const auto& x : judge_kernel_log(f))
    EXPECT_EQ(x.severity, Severity::kInfo) << x.code << ": " << x.message;
}

TEST(KernelLog, MlxHealthLinesFromTheDriverSource) {
  // The strings of drivers/net/ethernet/mellanox/mlx5/core/health.c.
  KernelLogFacts f;
  f.readable = true;
  scan_kernel_log({{5.0,
                    "mlx5_core 0000:d2:00.0: poll_health:825: device's health compromised - "
                    "reached miss count"}},
                  {}, f);
  ASSERT_TRUE(event(f, "mlx5_health", "0000:d2:00.0"));
  EXPECT_EQ(with(judge_kernel_log(f), "kernel_log.mlx5_health")[0].severity, Severity::kFail);
}

// Link lines as each driver's source prints them (log_lines.h), in the copies they reach us in.
TEST(KernelLog, LinkLinesOfEachDriver) {
  auto f = scan_fixture_text(
      "[   10.0] igb 0000:01:00.0 eno1: igb: eno1 NIC Link is Down\n"  // igb_main.c
      "[   11.0] e1000e: eth0 NIC Link is Down\n"                      // e1000e before netdev_info
      "[   12.0] mlx4_en: enp1s0: Link Down\n"                         // mlx4 en_netdev.c
      "[   13.0] pcieport 0000:00:1c.0: pciehp: Slot(1): Link Down\n"  // pciehp_ctrl.c
      "[   14.0] pcieport 0000:00:1c.0: pciehp: Slot(1): Link Up\n"
      "[   15.0] bond0: (slave eno50): link status definitely down, disabling slave\n"
      "[   16.0] bond0: (slave eno50): link status definitely up, 25000 Mbps full duplex\n"
      "[   17.0] mlx5_5: Port: 1 Link DOWN\n"  // mlx5 ib main.c before ibdev_info
      "node3: Mar 27 15:37:34 node3 kernel: mlx5_core 0000:01:00.1 eth1: Link down\n");
  for (const char* dev :
       {"0000:01:00.0", "eth0", "enp1s0", "0000:00:1c.0", "eno50", "mlx5_5", "0000:01:00.1"})
    EXPECT_TRUE(event(f, "link_down", dev)) << dev;
  EXPECT_EQ(f.events.size(), 7u);
  EXPECT_EQ(event(f, "link_down", "0000:00:1c.0")->ups_after_last_down, 1);
  EXPECT_EQ(event(f, "link_down", "eno50")->ups_after_last_down, 1);
}

TEST(KernelLog, TheWindowCountsOnlyRecordsFromItsStart) {
  KernelLogFacts f;
  f.readable = true;
  f.since_boot_s = 15;
  scan_kernel_log({{10.0, "NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus."},
                   {20.0, "NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=a, Graphics Exception"},
                   {std::nullopt, "NVRM: Xid (PCI:0000:18:00): 31, pid=2, name=b, MMU Fault"}},
                  {}, f);
  EXPECT_EQ(f.records, 3u);
  EXPECT_EQ(f.records_in_window, 2u);
  EXPECT_EQ(f.untimed_records, 1u);
  EXPECT_FALSE(xid(f, 79, "0000:18:00.0"));
  EXPECT_TRUE(xid(f, 13, "0000:18:00.0"));
  EXPECT_TRUE(xid(f, 31, "0000:18:00.0"));
}

TEST(KernelLog, ParsesSince) {
  EXPECT_EQ(parse_since("2h").seconds_ago, 7200.0);
  EXPECT_EQ(parse_since("1d12h").seconds_ago, 129600.0);
  EXPECT_EQ(parse_since("90m").seconds_ago, 5400.0);
  EXPECT_EQ(parse_since("45s").seconds_ago, 45.0);
  EXPECT_EQ(parse_since("2026-11-26T08:00:00Z").unix_time_s, 1795680000);
  EXPECT_EQ(parse_since("2026-11-26T10:00:00+02:00").unix_time_s, 1795680000);
  EXPECT_EQ(parse_since("2026-11-26 08:00:00.250Z").unix_time_s, 1795680000);
  for (const char* bad : {"", "2x", "h", "yesterday", "2026-13-01T00:00:00Z", "2026-11-26T08:00:00",
                          "2026-11-26", "-2h"}) {
    try {
      parse_since(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--since '") + bad + "'"),
                std::string::npos);
    }
  }
}

TEST(KernelLog, ASysrootFileWithAWindow) {
  testing::TempDir dir("kernel_log");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  auto absent = gather_kernel_log(ctx, {});
  EXPECT_FALSE(absent.readable);
  auto fs = judge_kernel_log(absent);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "kernel_log.not_captured");
  EXPECT_EQ(fs[0].severity, Severity::kInfo);

  testing::write_file(dir.path() / "dev/kmsg", fixture_text("dmesg_aer_fatal_xid79.txt"));
  testing::write_file(dir.path() / "proc/stat", "cpu  1 2 3\nbtime 1795600000\nprocesses 5\n");
  // A minute back from the capture's last record (74889.6 s) leaves the fatal burst only.
  ctx.options.kernel_log_since = parse_since("1m");
  auto f = gather_kernel_log(ctx, {});
  ASSERT_TRUE(f.readable);
  EXPECT_EQ(f.format, "dmesg");
  EXPECT_EQ(f.boot_time_unix_s, 1795600000);
  ASSERT_TRUE(f.since_boot_s);
  EXPECT_NEAR(*f.since_boot_s, 74889.644138 - 60, 1e-6);
  EXPECT_FALSE(event(f, "aer_correctable", "0000:00:02.0"));
  EXPECT_TRUE(event(f, "aer_fatal", "0000:00:02.0"));
  EXPECT_NE(f.window_note.find("counts back from its last record"), std::string::npos);
  // An RFC 3339 time through the capture's boot time.
  ctx.options.kernel_log_since = parse_since("2026-11-26T08:00:00Z");
  auto t = gather_kernel_log(ctx, {});
  EXPECT_NEAR(*t.since_boot_s, 80000.0, 1e-6);
  EXPECT_EQ(t.records_in_window, 0u);
  Json j = to_json(t);
  EXPECT_EQ(j["since"], "2026-11-26T08:00:00Z");
  EXPECT_EQ(j["records"], 13);
}

// This machine's /dev/kmsg: read without blocking as root; denied without CAP_SYSLOG when
// kernel.dmesg_restrict is 1, which is a fact, not a fault.
TEST(KernelLog, LiveDevKmsgReadsOrSaysWhyNot) {
  if (!std::filesystem::exists("/dev/kmsg")) GTEST_SKIP() << "no /dev/kmsg on this machine";
  ProbeContext ctx;
  ctx.roots = SystemRoots::live_system("");
  auto restrict_ = read_line("/proc/sys/kernel/dmesg_restrict");
  auto check_unprivileged = [&]() -> std::string {
    auto f = gather_kernel_log(ctx, {});
    if (restrict_ && *restrict_ == "1") {
      if (f.readable) return "read the log without privilege although dmesg_restrict is 1";
      if (f.unreadable_reason.find("dmesg_restrict is 1") == std::string::npos)
        return "reason does not name dmesg_restrict: " + f.unreadable_reason;
      auto fs = judge_kernel_log(f);
      if (fs.size() != 1 || fs[0].code != "kernel_log.unreadable" ||
          fs[0].severity != Severity::kInfo)
        return "expected one info kernel_log.unreadable";
    } else if (!f.readable) {
      return "unreadable: " + f.unreadable_reason;
    }
    return "";
  };
  if (geteuid() == 0) {
    auto f = gather_kernel_log(ctx, {});
    ASSERT_TRUE(f.readable) << f.unreadable_reason;
    EXPECT_EQ(f.format, "kmsg");
    EXPECT_GT(f.records, 0u);
    EXPECT_TRUE(f.first_s);
    // The same read as an unprivileged user, in a child that drops root.
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      std::string err =
          setgid(65534) == 0 && setuid(65534) == 0 ? check_unprivileged() : "could not drop root";
      ssize_t w = write(fds[1], err.data(), err.size());
      (void)w;
      _exit(0);
    }
    close(fds[1]);
    std::string err;
    char buf[512];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
      err.append(buf, static_cast<size_t>(n));
    close(fds[0]);
    waitpid(pid, nullptr, 0);
    EXPECT_EQ(err, "");
  } else {
    EXPECT_EQ(check_unprivileged(), "");
  }
}

}  // namespace
}  // namespace fabkit::probes
