// The kernel's reports of a node in trouble beyond GPUs and links (probes/kernel_log/
// system_lines.h), on real lines (tests/fixtures/kernel_log/README.md names where each comes
// from): what each groups to and the severity the peers give it.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "probes/kernel_log/kernel_log_facts.h"
#include "tests/support/ttar.h"
#include "tests/unit/kernel_log/kernel_log_test_support.h"

namespace fabkit::probes {
namespace {

using test_support::fixture_text;
using test_support::with;

KernelLogFacts scan_text(const std::string& text,
                         std::optional<std::vector<std::string>> gpus = std::nullopt) {
  KernelLogFacts f;
  f.readable = true;
  f.gpu_bus_ids = std::move(gpus);
  scan_kernel_log(parse_kernel_log_text(text, &f.format), {}, f);
  return f;
}

const LogEventGroup* event(const KernelLogFacts& f, const std::string& kind,
                           const std::string& dev) {
  for (const auto& e : f.events)
    if (e.kind == kind && e.device == dev) return &e;
  return nullptr;
}

bool has_detail(const LogEventGroup& e, const std::string& d) {
  return std::find(e.details.begin(), e.details.end(), d) != e.details.end();
}

TEST(KernelLogSystemEvents, NvlinkTrainingFailureFailsTheNode) {
  auto f = scan_text(fixture_text("nvlink_rx_detect.txt"));
  const auto* e = event(f, "nvlink_training_failed", "");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->count, 6);  // three tries, each printing both lines
  EXPECT_TRUE(has_detail(*e, "Failed to update Rx Detect Link mask"));
  EXPECT_TRUE(has_detail(*e, "Getting a peer's postRxDetLinkMask failed"));
  ASSERT_TRUE(e->first_s);
  EXPECT_DOUBLE_EQ(*e->first_s, 6619715.535712);
  auto fs = with(judge_kernel_log(f), "kernel_log.nvlink_training_failed");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kFail);
  EXPECT_NE(fs[0].fix.find("reboot"), std::string::npos);
}

TEST(KernelLogSystemEvents, NvlinkTrainingFailureNamingADeviceCountsOnlyForADeviceHere) {
  // The fixture's line under the driver's per-GPU prefix, as "NVRM: GPU 0000:2b:00.0: GPU has
  // fallen off the bus." carries it (xid_formats.txt).
  const std::string line =
      "[6619715.535712] NVRM: GPU 0000:18:00.0: knvlinkUpdatePostRxDetectLinkMask_IMPL: Failed to "
      "update Rx Detect Link mask!\n";
  auto here = scan_text(line, std::vector<std::string>{"0000:18:00.0"});
  ASSERT_TRUE(event(here, "nvlink_training_failed", "0000:18:00.0"));
  auto fs = with(judge_kernel_log(here), "kernel_log.nvlink_training_failed");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].subject, "0000:18:00.0");
  auto elsewhere = scan_text(line, std::vector<std::string>{"0000:19:00.0"});
  auto judged = judge_kernel_log(elsewhere);
  EXPECT_TRUE(with(judged, "kernel_log.nvlink_training_failed").empty());
  ASSERT_EQ(with(judged, "kernel_log.not_a_gpu").size(), 1u);
  EXPECT_EQ(with(judged, "kernel_log.not_a_gpu")[0].severity, Severity::kWarn);
}

TEST(KernelLogSystemEvents, HungTasksLockupsAndRcuStalls) {
  auto f = scan_text(fixture_text("lockups_stalls.txt"));
  // The comm "kworker/2:1" holds a colon of its own: the pid is after the last one.
  const auto* hung = event(f, "hung_task", "kworker/2:1");
  ASSERT_TRUE(hung);
  EXPECT_EQ(hung->count, 1);
  EXPECT_TRUE(has_detail(*hung, "blocked for more than 120 s"));
  EXPECT_TRUE(event(f, "hung_task", "ntpd"));
  const auto* cuda = event(f, "soft_lockup", "cuda-EvtHandlr");
  ASSERT_TRUE(cuda);
  EXPECT_TRUE(has_detail(*cuda, "CPU#0 stuck for 27 s"));
  EXPECT_TRUE(event(f, "soft_lockup", "python3"));
  EXPECT_TRUE(event(f, "hard_lockup", "CPU 79"));
  const auto* rcu = event(f, "rcu_stall", "");
  ASSERT_TRUE(rcu);
  EXPECT_EQ(rcu->count, 2);  // the 6.x wording and 3.x's rcu_sched_state
  EXPECT_TRUE(has_detail(*rcu, "rcu_sched detected stalls on CPUs/tasks"));
  EXPECT_TRUE(has_detail(*rcu, "rcu_sched_state detected stall on CPU"));
  EXPECT_EQ(f.events.size(), 6u);  // the Tainted and "echo 0 >" lines are nothing

  auto fs = judge_kernel_log(f);
  ASSERT_EQ(with(fs, "kernel_log.hung_task").size(), 2u);
  EXPECT_EQ(with(fs, "kernel_log.hung_task")[0].severity, Severity::kWarn);
  ASSERT_EQ(with(fs, "kernel_log.soft_lockup").size(), 2u);
  for (const auto& s : with(fs, "kernel_log.soft_lockup")) EXPECT_EQ(s.severity, Severity::kWarn);
  ASSERT_EQ(with(fs, "kernel_log.hard_lockup").size(), 1u);
  EXPECT_EQ(with(fs, "kernel_log.hard_lockup")[0].severity, Severity::kFail);
  ASSERT_EQ(with(fs, "kernel_log.rcu_stall").size(), 1u);
  EXPECT_EQ(with(fs, "kernel_log.rcu_stall")[0].severity, Severity::kWarn);
}

TEST(KernelLogSystemEvents, FatalMachineCheckAndItsPanicFail) {
  auto f = scan_text(fixture_text("mce_fatal_panic.txt"));
  const auto* mce = event(f, "mce_uncorrected", "");
  ASSERT_TRUE(mce);
  EXPECT_EQ(mce->count, 1);  // the exception; mce_panic's reason belongs to it
  EXPECT_TRUE(has_detail(*mce, "CPU 7 bank 0"));
  EXPECT_TRUE(has_detail(*mce, "Processor context corrupt"));
  const auto* panic = event(f, "kernel_panic", "");
  ASSERT_TRUE(panic);
  EXPECT_TRUE(has_detail(*panic, "Fatal machine check"));
  auto fs = judge_kernel_log(f);
  ASSERT_EQ(with(fs, "kernel_log.mce_uncorrected").size(), 1u);
  EXPECT_EQ(with(fs, "kernel_log.mce_uncorrected")[0].severity, Severity::kFail);
  ASSERT_EQ(with(fs, "kernel_log.kernel_panic").size(), 1u);
  EXPECT_EQ(with(fs, "kernel_log.kernel_panic")[0].severity, Severity::kFail);
}

TEST(KernelLogSystemEvents, CorrectedMachineChecksWarnFromLbnlNhcsLimit) {
  const std::string text = fixture_text("mce_corrected.txt");
  auto f = scan_text(text);
  const auto* mce = event(f, "mce_corrected", "");
  ASSERT_TRUE(mce);
  EXPECT_EQ(mce->count, 3);  // status cc...: bit 61 (UC) clear
  EXPECT_TRUE(has_detail(*mce, "CPU 2 bank 6"));
  EXPECT_FALSE(event(f, "mce_uncorrected", ""));
  EXPECT_TRUE(event(f, "mce_logged", ""));
  auto fs = judge_kernel_log(f);
  ASSERT_EQ(with(fs, "kernel_log.mce_corrected").size(), 1u);
  EXPECT_EQ(with(fs, "kernel_log.mce_corrected")[0].severity, Severity::kInfo);
  EXPECT_EQ(with(fs, "kernel_log.mce_logged")[0].severity, Severity::kInfo);
  // Four captures: 12 corrected errors, above the 9 NHC allows.
  auto many = judge_kernel_log(scan_text(text + text + text + text));
  EXPECT_EQ(with(many, "kernel_log.mce_corrected")[0].severity, Severity::kWarn);
}

TEST(KernelLogSystemEvents, OomKillsCountOncePerProcessAndWarn) {
  auto f = scan_text(fixture_text("oom_kills.txt"));
  // "oom-kill:" then "Out of memory: Killed process" is one kill, as is 4.x's "Kill process"
  // then "Killed process".
  const auto* python = event(f, "oom_kill", "python");
  ASSERT_TRUE(python);
  EXPECT_EQ(python->count, 1);
  const auto* dm = event(f, "oom_kill", "DeviceMemory");
  ASSERT_TRUE(dm);
  EXPECT_EQ(dm->count, 1);
  EXPECT_EQ(f.events.size(), 2u);  // oom_reaper's line is nothing
  auto fs = with(judge_kernel_log(f), "kernel_log.oom_kill");
  ASSERT_EQ(fs.size(), 2u);
  for (const auto& s : fs) EXPECT_EQ(s.severity, Severity::kWarn);
  EXPECT_NE(fs[0].message.find("killed python"), std::string::npos);
}

TEST(KernelLogSystemEvents, ACgroupsOwnOomKillIsInformation) {
  auto f = scan_text(fixture_text("gpud_dmesg_decode_iso.txt"));
  const auto* node = event(f, "oom_kill_cgroup", "node");
  ASSERT_TRUE(node);
  EXPECT_EQ(node->count, 1);
  auto fs = with(judge_kernel_log(f), "kernel_log.oom_kill");
  bool saw_node = false;
  for (const auto& s : fs)
    if (s.subject == "node") {
      saw_node = true;
      EXPECT_EQ(s.severity, Severity::kInfo);
    }
  EXPECT_TRUE(saw_node);
  ASSERT_TRUE(event(f, "oom_kill", "httpd"));
  EXPECT_EQ(event(f, "oom_kill", "httpd")->count, 2);  // two kills of pid 123, a python's between
}

TEST(KernelLogSystemEvents, Mlx5ModuleTemperatureAndSlotPower) {
  auto f = scan_text(fixture_text("mlx5_module_power.txt"));
  const auto* hot = event(f, "mlx5_module_error", "0000:5c:00.0");
  ASSERT_TRUE(hot);
  EXPECT_TRUE(has_detail(*hot, "High Temperature"));
  const auto* power = event(f, "mlx5_slot_power", "0000:5c:00.0");
  ASSERT_TRUE(power);
  EXPECT_TRUE(has_detail(*power, "27W"));
  EXPECT_TRUE(event(f, "mlx5_slot_power_unadvertised", "0000:13:00.0"));
  EXPECT_TRUE(event(f, "mlx5_slot_power_unadvertised", "0000:63:00.0"));
  EXPECT_EQ(f.events.size(), 4u);  // the PCIe bandwidth line is nothing
  auto fs = judge_kernel_log(f);
  ASSERT_EQ(with(fs, "kernel_log.mlx5_module_error").size(), 1u);
  EXPECT_EQ(with(fs, "kernel_log.mlx5_module_error")[0].severity, Severity::kWarn);
  int warns = 0, infos = 0;
  for (const auto& s : with(fs, "kernel_log.mlx5_slot_power")) {
    warns += s.severity == Severity::kWarn;
    infos += s.severity == Severity::kInfo;
  }
  EXPECT_EQ(warns, 1);
  EXPECT_EQ(infos, 2);
}

// gpud's tests hold the module report without mlx5_core's "0000:5c:00.0: " prefix (leptonai/gpud
// @4a8de33a, components/accelerator/nvidia/infiniband/kmsg_matcher_test.go); the function name is
// mlx5's own, so it still counts, naming no NIC.
TEST(KernelLogSystemEvents, Mlx5ModuleReportWithoutTheDevicePrefixStillWarns) {
  auto f = scan_text(
      "[Sun Dec  1 14:54:40 2024] mlx5_port_module_event:1131:(pid 0): Port module event[error]: "
      "module 0, Cable error, High Temperature\n");
  const auto* hot = event(f, "mlx5_module_error", "");
  ASSERT_TRUE(hot);
  EXPECT_TRUE(has_detail(*hot, "High Temperature"));
  auto fs = with(judge_kernel_log(f), "kernel_log.mlx5_module_error");
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].severity, Severity::kWarn);
  EXPECT_EQ(fs[0].subject, "mlx5");
  EXPECT_NE(fs[0].message.find("a mlx5 NIC (the line names none)"), std::string::npos);
}

TEST(KernelLogSystemEvents, ALongPanicReasonIsCutAtACharacterAndReachesJson) {
  // mce_fatal_panic.txt's panic line with a reason of 159 bytes and then a two-byte character
  // across the 160-byte cut.
  auto f = scan_text("Kernel panic - not syncing: " + std::string(159, 'a') + "\xc3\xa9 end\n");
  const auto* panic = event(f, "kernel_panic", "");
  ASSERT_TRUE(panic);
  ASSERT_EQ(panic->details.size(), 1u);
  EXPECT_EQ(panic->details[0], std::string(159, 'a'));
  EXPECT_NO_THROW(to_json(f).dump());
}

// Every real line of this file's fixtures put where a user can put text in a record the kernel
// prints, arch/x86/mm/fault.c's segfault report "COMM[PID]: segfault at ... in FILE[START+SIZE]"
// (6.1+ add " likely on CPU N (core N, socket N)"): the whole line as the file name, and its
// first 15 bytes as the comm with the rest as the file name. A file name holds no '/'.
TEST(KernelLogSystemEvents, EveryLineQuotedInASegfaultReportCountsForNothing) {
  std::string text;
  int pid = 4000;
  for (const char* name :
       {"nvlink_rx_detect.txt", "lockups_stalls.txt", "mce_fatal_panic.txt", "mce_corrected.txt",
        "oom_kills.txt", "mlx5_module_power.txt", "gpud_dmesg_decode_iso.txt"}) {
    std::string format;
    for (const auto& r : parse_kernel_log_text(fixture_text(name), &format)) {
      const std::string m = r.message.substr(0, r.message.find('\n'));
      const std::string comm = m.substr(0, 15), rest = m.size() > 15 ? m.substr(15) : "x";
      for (const char* tail : {"", " likely on CPU 3 (core 3, socket 0)"}) {
        const std::string at =
            "]: segfault at 0 ip 000055d5c0a0b1c4 sp 00007ffd4c0a3e10 error 4 in ";
        if (m.find('/') == std::string::npos)
          text += "[    5.000000] python3[" + std::to_string(pid++) + at + m +
                  "[55d5c0a0b000+1000]" + tail + "\n";
        if (rest.find('/') == std::string::npos)
          text += "[    5.000000] " + comm + "[" + std::to_string(pid++) + at + rest +
                  "[55d5c0a0b000+1000]" + tail + "\n";
      }
    }
  }
  auto f = scan_text(text);
  EXPECT_GT(f.records, 150u);
  EXPECT_TRUE(f.events.empty()) << f.events[0].kind << ": " << f.events[0].sample;
  EXPECT_TRUE(f.xids.empty());
}

TEST(KernelLogSystemEvents, QuotedOrUserWrittenCopiesCountForNothing) {
  // A segfault report quoting a file a user named after a panic line, the same words from
  // user space through /dev/kmsg (facility 1), and a comm that starts like a hung-task line.
  auto f = scan_text(
      "python3[4242]: segfault at 0 ip 00007f error 4 in Kernel panic - not syncing: Fatal "
      "machine check[7f00+1000]\n"
      "14,5,100,-;Kernel panic - not syncing: Fatal machine check\n"
      "14,6,101,-;watchdog: BUG: soft lockup - CPU#0 stuck for 27s! [cuda-EvtHandlr:2255424]\n"
      "task a:1 blocke[4243]: segfault at 0 ip 00007f error 4 in x blocked for more than 120 "
      "seconds.[7f00+1000]\n");
  EXPECT_TRUE(f.events.empty());
  EXPECT_EQ(f.user_space_records, 2u);
}

}  // namespace
}  // namespace fabkit::probes
