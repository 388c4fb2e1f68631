// GPU health through the fixture-driven NVML: the healthy 8x H100 SXM node and one fixture per
// fault (tests/fixtures/nvml, made by make_fixtures.py), gathered with the same code that reads
// libnvidia-ml and judged; the old-driver fallbacks; every call's "not supported here" fact; the
// call budget of the gather; and --nvml-record's fixture replaying to the same facts.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "common/errors.h"
#include "probes/gpu/gpu_facts.h"
#include "probes/gpu/nvml_fake.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

Json fixture(const std::string& name) {
  std::ifstream in(testing::project_fixtures() / "nvml" / name);
  EXPECT_TRUE(in) << name;
  return Json::parse(in);
}

// A live-looking node whose /proc and /sys are fixture trees (NVML itself is the fake).
struct Node {
  testing::TempDir dir{"gpu-health"};
  ProbeContext ctx;
  Node() {
    ctx.roots = SystemRoots::live_system("");
    ctx.roots.sys = dir.path() / "sys";
    ctx.roots.proc = dir.path() / "proc";
    testing::write_file(ctx.roots.proc / "48213/comm", "python3\n");
  }
  GpuFacts gather(const Json& fx) {
    nvml::Library lib = nvml::fake_library(fx);
    return gather_gpu(ctx, lib);
  }
};

std::vector<Finding> of(const std::vector<Finding>& fs, const std::string& code) {
  std::vector<Finding> out;
  for (const auto& f : fs)
    if (f.code == code) out.push_back(f);
  return out;
}

// The first finding of the code; a failure (and an empty finding) when there is none, so a
// missing finding fails the test instead of reading past the end.
Finding one(const std::vector<Finding>& fs, const std::string& code, size_t nth = 0) {
  auto all = of(fs, code);
  if (all.size() <= nth) {
    ADD_FAILURE() << "no finding " << code << " #" << nth;
    return Finding{};
  }
  return all[nth];
}

// The warn/fail findings as "code subject" lines, in order.
std::vector<std::string> problems(const std::vector<Finding>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs)
    if (f.severity != Severity::kInfo) out.push_back(f.code + " " + f.subject);
  return out;
}

TEST(GpuHealth, HealthyH100NodeHasNoWarningAndEveryFactIsRead) {
  Node node;
  GpuFacts f = node.gather(fixture("h100_sxm_8gpu_healthy.json"));
  ASSERT_EQ(f.devices.size(), 8u);
  const GpuHealth& h = f.devices[3].health;
  EXPECT_EQ(h.ecc.enabled, true);
  EXPECT_EQ(h.ecc.volatile_counts.uncorrected, 0u);
  EXPECT_EQ(h.ecc.aggregate_counts.corrected, 0u);
  ASSERT_TRUE(h.remapped_rows);
  EXPECT_FALSE(h.remapped_rows->pending);
  ASSERT_TRUE(h.clocks);
  EXPECT_EQ(h.clocks->call, "nvmlDeviceGetCurrentClocksEventReasons");
  EXPECT_EQ(clock_event_reason_names(h.clocks->mask), std::vector<std::string>{"gpu_idle"});
  EXPECT_EQ(h.thermal.temperature_c, 34);
  EXPECT_EQ(h.thermal.slowdown_c, 90);
  EXPECT_EQ(h.thermal.shutdown_c, 92);
  EXPECT_EQ(topo::to_string(h.pcie_current), "Gen5 x16");
  ASSERT_TRUE(h.nvlinks);
  EXPECT_EQ(h.nvlinks->size(), 18u);  // links 18..35 answer Invalid Argument: not this GPU's
  EXPECT_EQ(h.nvlinks->back().crc_data, 0u);
  ASSERT_TRUE(h.fabric);
  EXPECT_EQ(h.fabric->struct_version, 3);
  EXPECT_EQ(fabric_state_name(h.fabric->state), "completed");
  EXPECT_EQ(h.fabric->cluster_uuid, "7c4ae5d2-0b1f-4c3e-8d6a-2f9b1e0a4c51");
  ASSERT_TRUE(h.processes);
  EXPECT_TRUE(h.processes->empty());
  EXPECT_EQ(h.vbios_version, "96.00.99.00.01");
  EXPECT_EQ(h.inforom_image_version, "G520.0200.00.05");
  EXPECT_EQ(h.board_part_number, "692-2G520-0200-000");
  EXPECT_EQ(compute_mode_name(*h.compute_mode), "default");
  EXPECT_EQ(h.mig_enabled, false);
  // H100 has no page retirement (rows are remapped instead): the only call not answered.
  ASSERT_EQ(h.not_supported.size(), 1u);
  EXPECT_EQ(h.not_supported[0].call, "nvmlDeviceGetRetiredPagesPendingStatus");
  EXPECT_EQ(h.not_supported[0].code, nvml::kErrorNotSupported);
  EXPECT_TRUE(f.devices[3].errors.empty());

  auto fs = judge_gpu(f, 8);
  EXPECT_EQ(problems(fs), std::vector<std::string>{});
  ASSERT_EQ(of(fs, "gpu.not_supported").size(), 1u);
  EXPECT_NE(
      one(fs, "gpu.not_supported")
          .message.find(
              "nvmlDeviceGetRetiredPagesPendingStatus (Not Supported) on GPU 0,1,2,3,4,5,6,7"),
      std::string::npos)
      << one(fs, "gpu.not_supported").message;
  Json j = to_json(f);
  EXPECT_EQ(j["devices"][3]["health"]["clocks_event_reasons"]["reasons"],
            Json::array({"gpu_idle"}));
  EXPECT_EQ(j["devices"][3]["health"]["fabric"]["state"], "completed");
  EXPECT_EQ(j["devices"][3]["health"]["nvlinks"].size(), 18u);
  EXPECT_EQ(nvml::fake_calls().init, nvml::fake_calls().shutdown);
}

TEST(GpuHealth, UncorrectableEccFailsTheGpuAndNamesTheReset) {
  Node node;
  auto fs = judge_gpu(node.gather(fixture("h100_ecc_uncorrected.json")), 8);
  EXPECT_EQ(problems(fs), std::vector<std::string>{"gpu.ecc_uncorrected 0000:5d:00.0"});
  const Finding e = one(fs, "gpu.ecc_uncorrected");
  EXPECT_EQ(e.severity, Severity::kFail);
  EXPECT_NE(e.message.find("2 uncorrectable ECC error(s) since the driver loaded"),
            std::string::npos)
      << e.message;
  EXPECT_NE(e.fix.find("nvidia-smi -r -i 3"), std::string::npos) << e.fix;
  EXPECT_NE(e.fix.find("RMA"), std::string::npos) << e.fix;
}

TEST(GpuHealth, RemapPendingFailsAndRemapFailureSaysRma) {
  Node node;
  auto fs = judge_gpu(node.gather(fixture("h100_remap_pending.json")), 8);
  EXPECT_EQ(problems(fs), (std::vector<std::string>{"gpu.ecc_uncorrected_history 0000:5d:00.0",
                                                    "gpu.remap_pending 0000:5d:00.0",
                                                    "gpu.remap_failed 0000:ba:00.0"}));
  EXPECT_EQ(one(fs, "gpu.remap_pending").severity, Severity::kFail);
  EXPECT_NE(one(fs, "gpu.remap_pending").fix.find("nvidia-smi -r -i 3"), std::string::npos);
  EXPECT_EQ(one(fs, "gpu.remap_failed").severity, Severity::kFail);
  EXPECT_NE(one(fs, "gpu.remap_failed").fix.find("RMA the GPU"), std::string::npos);
  EXPECT_NE(one(fs, "gpu.remap_failed").message.find("3 row(s) remapped for correctable and 9"),
            std::string::npos);
  EXPECT_EQ(one(fs, "gpu.ecc_uncorrected_history").severity, Severity::kWarn);
}

TEST(GpuHealth, ThrottlingNamesEachHardwareReasonAndTheTemperature) {
  Node node;
  auto fs = judge_gpu(node.gather(fixture("h100_throttled.json")), 8);
  EXPECT_EQ(problems(fs),
            (std::vector<std::string>{
                "gpu.clocks_hw_slowdown 0000:5d:00.0", "gpu.clocks_hw_thermal 0000:5d:00.0",
                "gpu.temperature_high 0000:5d:00.0", "gpu.clocks_hw_power_brake 0000:ab:00.0"}));
  for (const auto& f : fs) {
    if (f.severity != Severity::kInfo) {
      EXPECT_EQ(f.severity, Severity::kWarn) << f.code;
    }
  }
  const Finding t = one(fs, "gpu.clocks_hw_thermal");
  EXPECT_NE(t.message.find("HW Thermal Slowdown"), std::string::npos) << t.message;
  EXPECT_NE(t.fix.find("nvidia-smi -q -d TEMPERATURE -i 3"), std::string::npos) << t.fix;
  EXPECT_NE(one(fs, "gpu.temperature_high")
                .message.find("88 °C, within 5 °C of its slowdown "
                              "threshold (90 °C; shutdown at 92 °C)"),
            std::string::npos)
      << one(fs, "gpu.temperature_high").message;
  EXPECT_NE(one(fs, "gpu.clocks_hw_power_brake").message.find("external power brake"),
            std::string::npos);
}

TEST(GpuHealth, IdleAndPowerCapReasonsAreNotFaults) {
  Node node;
  Json fx = fixture("h100_sxm_8gpu_healthy.json");
  fx["devices"][0]["clocks_event_reasons"] =
      nvml::kClocksGpuIdle | nvml::kClocksApplicationsClocksSetting | nvml::kClocksSwPowerCap |
      nvml::kClocksSyncBoost | nvml::kClocksDisplayClockSetting;
  auto fs = judge_gpu(node.gather(fx), 8);
  EXPECT_EQ(problems(fs), std::vector<std::string>{});
  ASSERT_EQ(of(fs, "gpu.clocks_sw_power_cap").size(), 1u);
  EXPECT_EQ(one(fs, "gpu.clocks_sw_power_cap").severity, Severity::kInfo);
}

TEST(GpuHealth, NarrowPcieLinkWarnsWithTheBandwidthButALowerSpeedAtIdleDoesNot) {
  Node node;
  auto fs = judge_gpu(node.gather(fixture("h100_pcie_x8.json")), 8);
  EXPECT_EQ(problems(fs), std::vector<std::string>{"gpu.pcie_width_degraded 0000:5d:00.0"});
  const Finding w = one(fs, "gpu.pcie_width_degraded");
  // Gen5: 32 GT/s x 128/130: x8 = 252 Gbit/s of x16's 504 per direction.
  EXPECT_NE(w.message.find("PCIe Gen4 x8 of Gen5 x16 possible (NVML: the GPU and its slot): 252 of "
                           "504 Gbit/s per direction at Gen5"),
            std::string::npos)
      << w.message;
  EXPECT_NE(w.fix.find("lspci -vv -s 0000:5d:00.0"), std::string::npos) << w.fix;
  // Gen4 of Gen5 at idle: named, not judged.
  ASSERT_EQ(of(fs, "gpu.pcie_speed_reduced").size(), 1u);
  EXPECT_EQ(one(fs, "gpu.pcie_speed_reduced").severity, Severity::kInfo);

  // The same lower speed while processes run and the GPU is not idle is a warning.
  Json fx = fixture("h100_busy.json");
  fx["devices"][3]["pcie"]["current_generation"] = 3;
  auto busy = judge_gpu(node.gather(fx), 8);
  EXPECT_EQ(of(busy, "gpu.pcie_speed_degraded").size(), 1u);
  EXPECT_EQ(of(busy, "gpu.pcie_speed_reduced").size(), 0u);
}

TEST(GpuHealth, InactiveNvlinkOnAnNvswitchSystemFailsAndErrorCountersWarn) {
  Node node;
  auto fs = judge_gpu(node.gather(fixture("h100_nvlink_down.json")), 8);
  EXPECT_EQ(problems(fs), (std::vector<std::string>{"gpu.nvlink_down 0000:5d:00.0",
                                                    "gpu.nvlink_errors 0000:9a:00.0"}));
  const Finding d = one(fs, "gpu.nvlink_down");
  EXPECT_EQ(d.severity, Severity::kFail);
  EXPECT_NE(d.message.find("16 of 18 NVLinks active on an NVSwitch system; down: link(s) 7, 12"),
            std::string::npos)
      << d.message;
  EXPECT_NE(one(fs, "gpu.nvlink_errors")
                .message.find("link 2: replay 12, recovery 1, CRC flit 40, CRC data 0"),
            std::string::npos)
      << one(fs, "gpu.nvlink_errors").message;
}

TEST(GpuHealth, NvlinkRuleOffNvswitchComparesGpusOfTheSameModel) {
  Node node;
  // PCIe cards with NVLink bridges: no fabric, some links unused by design on every GPU.
  Json fx = fixture("h100_sxm_8gpu_healthy.json");
  for (auto& d : fx["devices"]) {
    d.erase("fabric");
    for (int l = 12; l < 18; ++l) d["nvlinks"][l] = {{"active", false}};
  }
  auto same = judge_gpu(node.gather(fx), 8);
  EXPECT_EQ(problems(same), std::vector<std::string>{});  // 12 of 18 on every GPU: the design
  fx["devices"][2]["nvlinks"][0] = {{"active", false}};   // one bridge link lost on GPU 2
  auto lost = judge_gpu(node.gather(fx), 8);
  EXPECT_EQ(problems(lost), std::vector<std::string>{"gpu.nvlink_down 0000:3a:00.0"});
  EXPECT_NE(one(lost, "gpu.nvlink_down").fix.find("NVLink bridge"), std::string::npos);
  // No bridge anywhere: a fact, not a fault.
  for (auto& d : fx["devices"])
    for (auto& l : d["nvlinks"]) l = {{"active", false}};
  auto none = judge_gpu(node.gather(fx), 8);
  EXPECT_EQ(problems(none), std::vector<std::string>{});
  EXPECT_EQ(of(none, "gpu.nvlink_inactive").size(), 1u);
  // A GPU without NVLink answers Not Supported for link 0: recorded, no NVLink facts.
  fx["devices"][0].erase("nvlinks");
  GpuFacts f = node.gather(fx);
  EXPECT_FALSE(f.devices[0].health.nvlinks);
  bool noted = false;
  for (const auto& n : f.devices[0].health.not_supported)
    noted = noted || (n.call == "nvmlDeviceGetNvLinkState" && n.code == nvml::kErrorNotSupported);
  EXPECT_TRUE(noted);
  EXPECT_EQ(nvml::fake_calls().by_call["nvmlDeviceGetNvLinkState"], 7 * 36 + 1);
}

TEST(GpuHealth, FabricManagerNotStartedFailsEveryGpuNamingTheService) {
  Node node;
  auto fs = judge_gpu(node.gather(fixture("h100_fabric_manager_not_started.json")), 8);
  auto not_ready = of(fs, "gpu.fabric_not_ready");
  ASSERT_EQ(not_ready.size(), 8u);
  EXPECT_EQ(problems(fs).size(), 8u);
  EXPECT_EQ(not_ready[0].severity, Severity::kFail);
  EXPECT_NE(not_ready[0].message.find("NVSwitch fabric state is not_started"), std::string::npos)
      << not_ready[0].message;
  EXPECT_NE(not_ready[0].fix.find("systemctl status nvidia-fabricmanager"), std::string::npos);
  EXPECT_NE(not_ready[0].fix.find("its version must equal the driver's"), std::string::npos);
}

TEST(GpuHealth, FabricErrorsAndDegradedHealth) {
  Node node;
  Json fx = fixture("h100_sxm_8gpu_healthy.json");
  fx["devices"][1]["fabric"]["status"] = nvml::kErrorUnknown;  // completed, with an error
  fx["devices"][2]["fabric"]["health_summary"] = nvml::kFabricHealthUnhealthy;
  fx["devices"][3]["fabric"]["health_summary"] = nvml::kFabricHealthLimitedCapacity;
  fx["devices"][4]["fabric"]["health_mask"] = 170 - 2 + nvml::kFabricHealthMaskDegradedBwTrue;
  fx["devices"][5]["fabric"]["state"] = nvml::kFabricStateNotSupported;  // not an NVSwitch GPU
  fx["devices"][5]["nvlinks"][0] = {{"active", false}};  // ... so judged against its peers
  auto fs = judge_gpu(node.gather(fx), 8);
  EXPECT_EQ(problems(fs), (std::vector<std::string>{
                              "gpu.nvlink_down 0000:ab:00.0", "gpu.fabric_failed 0000:2a:00.0",
                              "gpu.fabric_failed 0000:3a:00.0", "gpu.fabric_degraded 0000:5d:00.0",
                              "gpu.fabric_degraded 0000:9a:00.0"}));
  EXPECT_NE(one(fs, "gpu.fabric_failed").message.find("Unknown Error"), std::string::npos);
  EXPECT_NE(one(fs, "gpu.fabric_degraded", 1).message.find("bandwidth is degraded"),
            std::string::npos);
}

TEST(GpuHealth, FabricV2DriverAndUnversionedCall) {
  Node node;
  Json fx = fixture("h100_sxm_8gpu_healthy.json");
  fx["devices"][0]["fabric"]["max_version"] = 2;  // an R550-R575 driver: v3 is refused
  fx["devices"][1]["fabric"]["max_version"] = 1;  // only the unversioned call works
  GpuFacts f = node.gather(fx);
  ASSERT_TRUE(f.devices[0].health.fabric);
  EXPECT_EQ(f.devices[0].health.fabric->struct_version, 2);
  EXPECT_EQ(f.devices[0].health.fabric->health_mask, 170u);
  EXPECT_FALSE(f.devices[0].health.fabric->health_summary);  // v2 has none
  ASSERT_TRUE(f.devices[1].health.fabric);
  EXPECT_EQ(f.devices[1].health.fabric->call, "nvmlDeviceGetGpuFabricInfo");
  EXPECT_FALSE(f.devices[1].health.fabric->health_mask);
  bool noted = false;
  for (const auto& n : f.devices[1].health.not_supported)
    noted = noted || (n.call == "nvmlDeviceGetGpuFabricInfoV" &&
                      n.code == nvml::kErrorArgumentVersionMismatch &&
                      n.note == "used nvmlDeviceGetGpuFabricInfo");
  EXPECT_TRUE(noted);
  EXPECT_EQ(problems(judge_gpu(f, 8)), std::vector<std::string>{});
}

TEST(GpuHealth, BusyGpuNamesTheProcessesFromProc) {
  Node node;
  auto fs = judge_gpu(node.gather(fixture("h100_busy.json")), 8);
  EXPECT_EQ(problems(fs), std::vector<std::string>{"gpu.busy 0000:5d:00.0"});
  const Finding b = one(fs, "gpu.busy");
  EXPECT_EQ(b.severity, Severity::kWarn);
  // pid 48213's comm is in the fixture /proc; 48377 is not visible here (another PID namespace).
  EXPECT_NE(b.message.find("2 process(es) already hold the GPU: pid 48213 (python3) 32768 MiB, "
                           "pid 48377 1024 MiB"),
            std::string::npos)
      << b.message;
}

TEST(GpuHealth, LostGpuFailsAndStopsAsking) {
  Node node;
  GpuFacts f = node.gather(fixture("h100_gpu_lost.json"));
  // Inventory: the memory call failed (lost); no health call after it.
  EXPECT_EQ(f.devices[3].errors,
            std::vector<std::string>{"nvmlDeviceGetMemoryInfo: GPU is lost (NVML error 15)"});
  auto fs = judge_gpu(f, 8);
  EXPECT_EQ(problems(fs),
            (std::vector<std::string>{"gpu.query_failed 0000:5d:00.0", "gpu.lost 0000:5d:00.0"}));
  EXPECT_EQ(one(fs, "gpu.lost").severity, Severity::kFail);
  EXPECT_NE(one(fs, "gpu.lost").message.find("Xid 79"), std::string::npos);

  // Lost in the middle of the health queries: the first failing call is named, the rest skipped.
  Json fx = fixture("h100_sxm_8gpu_healthy.json");
  fx["devices"][0]["errors"] = {{"nvmlDeviceGetRemappedRows", nvml::kErrorGpuIsLost}};
  GpuFacts mid = node.gather(fx);
  EXPECT_EQ(mid.devices[0].errors,
            std::vector<std::string>{"nvmlDeviceGetRemappedRows: GPU is lost (NVML error 15)"});
  EXPECT_EQ(nvml::fake_calls().by_call["nvmlDeviceGetNvLinkState"], 7 * 36);  // not GPU 0's
  EXPECT_EQ(of(judge_gpu(mid, 8), "gpu.lost").size(), 1u);
}

TEST(GpuHealth, OldDriverUsesTheOlderNamesAndRecordsWhatIsMissing) {
  Node node;
  GpuFacts f = node.gather(fixture("a100_old_driver_r470.json"));
  ASSERT_EQ(f.devices.size(), 2u);
  const GpuHealth& h = f.devices[0].health;
  ASSERT_TRUE(h.clocks);
  EXPECT_EQ(h.clocks->call, "nvmlDeviceGetCurrentClocksThrottleReasons");
  EXPECT_EQ(h.thermal.temperature_c, 27);  // nvmlDeviceGetTemperature
  ASSERT_TRUE(h.processes);                // nvmlDeviceGetComputeRunningProcesses_v2
  ASSERT_TRUE(h.nvlinks);
  EXPECT_EQ(h.nvlinks->size(), 12u);
  EXPECT_FALSE(h.fabric);
  std::vector<std::string> missing;
  for (const auto& n : h.not_supported)
    if (!n.code) missing.push_back(n.call + (n.note.empty() ? "" : " / " + n.note));
  EXPECT_EQ(missing,
            (std::vector<std::string>{"nvmlDeviceGetCurrentClocksEventReasons / used "
                                      "nvmlDeviceGetCurrentClocksThrottleReasons",
                                      "nvmlDeviceGetTemperatureV / used nvmlDeviceGetTemperature",
                                      "nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetGpuFabricInfo",
                                      "nvmlDeviceGetComputeRunningProcesses_v3 / used "
                                      "nvmlDeviceGetComputeRunningProcesses_v2"}));
  EXPECT_EQ(f.devices[0].numa_source, "");  // no NUMA entry point and no sysfs entry here
  auto fs = judge_gpu(f, 2);
  // Not one false fault from the missing calls; the one finding is the driver's persistence mode.
  EXPECT_EQ(problems(fs), (std::vector<std::string>{"gpu.persistence_off 0000:07:00.0",
                                                    "gpu.persistence_off 0000:47:00.0"}));
  const Finding ns = one(fs, "gpu.not_supported");
  EXPECT_NE(ns.message.find("nvmlDeviceGetGpuFabricInfoV (not in this libnvidia-ml) on GPU 0,1"),
            std::string::npos)
      << ns.message;
}

TEST(GpuHealth, FunctionNotFoundFallsBackToTheOlderName) {
  Node node;
  Json fx = fixture("h100_sxm_8gpu_healthy.json");
  fx["devices"][0]["errors"] = {
      {"nvmlDeviceGetCurrentClocksEventReasons", nvml::kErrorFunctionNotFound},
      {"nvmlDeviceGetTemperatureV", nvml::kErrorArgumentVersionMismatch}};
  GpuFacts f = node.gather(fx);
  ASSERT_TRUE(f.devices[0].health.clocks);
  EXPECT_EQ(f.devices[0].health.clocks->call, "nvmlDeviceGetCurrentClocksThrottleReasons");
  EXPECT_EQ(f.devices[0].health.thermal.temperature_c, 31);
  EXPECT_TRUE(f.devices[0].errors.empty());
  // Any other error is named, not retried under the old name.
  fx["devices"][0]["errors"] = {{"nvmlDeviceGetCurrentClocksEventReasons", nvml::kErrorUnknown}};
  GpuFacts g = node.gather(fx);
  EXPECT_FALSE(g.devices[0].health.clocks);
  EXPECT_EQ(g.devices[0].errors,
            std::vector<std::string>{"nvmlDeviceGetCurrentClocksEventReasons: Unknown Error "
                                     "(NVML error 999)"});
}

TEST(GpuHealth, EccOffAndModeChangesAndMigAndComputeMode) {
  Node node;
  Json fx = fixture("h100_sxm_8gpu_healthy.json");
  fx["devices"][0]["ecc_mode"] = {{"current", false}, {"pending", true}};
  fx["devices"][1]["mig_mode"] = {{"current", true}, {"pending", true}};
  fx["devices"][2]["compute_mode"] = nvml::kComputeModeProhibited;
  fx["devices"][3]["compute_mode"] = nvml::kComputeModeExclusiveProcess;
  fx["devices"][4]["persistence_mode"] = false;
  GpuFacts f = node.gather(fx);
  EXPECT_FALSE(f.devices[0].health.ecc.volatile_counts.uncorrected);  // counts need ECC on
  auto fs = judge_gpu(f, 8);
  EXPECT_EQ(problems(fs),
            (std::vector<std::string>{
                "gpu.ecc_disabled 0000:18:00.0", "gpu.mig_enabled 0000:2a:00.0",
                "gpu.compute_prohibited 0000:3a:00.0", "gpu.persistence_off 0000:9a:00.0"}));
  EXPECT_EQ(of(fs, "gpu.mode_change_pending").size(), 1u);
  EXPECT_EQ(of(fs, "gpu.compute_exclusive").size(), 1u);
  EXPECT_NE(one(fs, "gpu.ecc_disabled").fix.find("nvidia-smi -i 0 -e 1"), std::string::npos);
}

TEST(GpuHealth, RetiredPagesPendingOnOlderGpus) {
  Node node;
  Json fx = fixture("a100_old_driver_r470.json");
  fx["devices"][1]["retired_pages"] = {
      {"pending", true}, {"multiple_single_bit", 2}, {"double_bit", 1}};
  GpuFacts f = node.gather(fx);
  EXPECT_EQ(f.devices[1].health.retired_pages.double_bit, 1u);
  EXPECT_EQ(f.devices[1].health.retired_pages.multiple_single_bit, 2u);
  auto rp = of(judge_gpu(f, 2), "gpu.retired_pages_pending");
  ASSERT_EQ(rp.size(), 1u);
  EXPECT_EQ(rp[0].severity, Severity::kFail);
  EXPECT_NE(rp[0].message.find("1 retired for double-bit, 2 for repeated single-bit"),
            std::string::npos)
      << rp[0].message;
}

// The budget: every NVML call is cheap (no CUDA context), but they add up on 8 GPUs. The count is
// what a real node pays; the wall time here is the gather's own cost around the fake.
TEST(GpuHealth, GatherOfAnEightGpuNodeStaysWithinItsCallBudget) {
  Node node;
  Json fx = fixture("h100_sxm_8gpu_healthy.json");
  std::vector<double> ms;
  for (int i = 0; i < 21; ++i) {
    nvml::Library lib = nvml::fake_library(fx);
    auto t0 = std::chrono::steady_clock::now();
    GpuFacts f = gather_gpu(node.ctx, lib);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    ASSERT_EQ(f.devices.size(), 8u);
  }
  std::sort(ms.begin(), ms.end());
  nvml::FakeCalls calls = nvml::fake_calls();
  // Per GPU: 7 inventory + 4 identity + 5 ECC + 8 ECC by location (SRAM, DRAM) + 1 retired +
  // 1 remap + 1 clocks + 3 thermal + 1 persistence + 4 PCIe + 36 NVLink states + 18 x 4
  // counters + 1 fabric + 1 processes + 2 modes = 147; plus init, driver, CUDA version, count,
  // shutdown.
  EXPECT_EQ(calls.total, 8 * 147 + 5) << "calls per 8-GPU node check";
  EXPECT_EQ(calls.by_call["nvmlDeviceGetMemoryErrorCounter"], 8 * 8);
  EXPECT_EQ(calls.by_call["nvmlDeviceGetNvLinkErrorCounter"], 8 * 18 * 4);
  EXPECT_LT(ms[ms.size() / 2], 20.0) << "median gather ms with the fake";
  std::printf("8-GPU gather through the fake: %d NVML calls, median %.3f ms, max %.3f ms\n",
              calls.total, ms[ms.size() / 2], ms.back());
}

// --nvml-record's fixture, replayed, gives the same facts: the recorder writes every fact the
// gather reads, in the fake's format.
TEST(GpuHealth, RecordedFixtureReplaysToTheSameFacts) {
  Node node;
  for (const char* name :
       {"h100_sxm_8gpu_healthy.json", "h100_faults.json", "h100_fabric_manager_not_started.json",
        "a100_old_driver_r470.json", "h100_remap_pending.json"}) {
    GpuFacts first = node.gather(fixture(name));
    Json recorded = nvml_fixture_from_facts(first);
    GpuFacts again = node.gather(recorded);
    Json a = to_json(first), b = to_json(again);
    a.erase("query_ms");
    b.erase("query_ms");
    EXPECT_EQ(a, b) << name << "\nrecorded: " << recorded.dump().substr(0, 2000);
    EXPECT_EQ(judge_gpu(first, 8).size(), judge_gpu(again, 8).size()) << name;
  }
}

TEST(GpuHealth, ReplayOptionReadsTheFileAndNamesBadOnes) {
  Node node;
  node.ctx.options.nvml_replay = testing::project_fixtures() / "nvml/h100_busy.json";
  GpuFacts f = gather_gpu(node.ctx);
  ASSERT_TRUE(f.replay);
  EXPECT_EQ(f.devices.size(), 8u);
  // Live roots with a replayed file: its PIDs are another machine's, so they are not named here.
  EXPECT_EQ(f.devices[3].health.processes->at(0).name, "");
  node.ctx.roots.live = false;  // under --sysroot: the captured tree's /proc names them
  EXPECT_EQ(gather_gpu(node.ctx).devices[3].health.processes->at(0).name, "python3");

  testing::TempDir dir("nvml-replay-bad");
  testing::write_file(dir.path() / "typo.json",
                      R"({"devices": [{"name": "x", "uuid": "u", "bus_id": "b", "ecc_mod": {}}]})");
  node.ctx.options.nvml_replay = dir.path() / "typo.json";
  try {
    gather_gpu(node.ctx);
    FAIL() << "a misspelt member was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("typo.json: NVML fixture: devices[0].ecc_mod: is not a "
                                         "member this fixture format knows"),
              std::string::npos)
        << e.what();
  }
  testing::write_file(dir.path() / "cut.json", R"({"devices": [)");
  node.ctx.options.nvml_replay = dir.path() / "cut.json";
  EXPECT_THROW(gather_gpu(node.ctx), UsageError);
  node.ctx.options.nvml_replay = dir.path() / "absent.json";
  EXPECT_THROW(gather_gpu(node.ctx), UsageError);
}

TEST(NvmlFake, RefusesUnknownEntryPointsAndWrongTypes) {
  Json fx = fixture("a100_old_driver_r470.json");
  fx["missing_entry_points"].push_back("nvmlDeviceGetNoSuchThing");
  EXPECT_THROW(nvml::fake_library(fx), std::invalid_argument);
  fx = fixture("a100_old_driver_r470.json");
  fx["devices"][0]["remapped_rows"]["pending"] = "yes";
  try {
    nvml::fake_library(fx);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("devices[0].remapped_rows.pending: must be true or false"),
              std::string::npos)
        << e.what();
  }
  fx = fixture("a100_old_driver_r470.json");
  fx["devices"][0]["fabric"] = {{"state", 3}, {"cluster_uuid", "not-a-uuid"}};
  EXPECT_THROW(nvml::fake_library(fx), std::invalid_argument);
}

// A replayed temperature of 80.5, 1e30 or -5 became 80, INT_MIN or 4294967291: a number NVML could
// not have answered is refused, naming the field, the range and what the file said.
TEST(NvmlFake, RefusesNumbersNvmlCouldNotHaveAnswered) {
  const Json values[] = {Json(80.5), Json(1e30), Json(-5), Json(4294967296ull), Json(1001),
                         Json("80")};
  for (const Json& v : values) {
    Json fx = fixture("a100_old_driver_r470.json");
    fx["devices"][0]["temperature_c"] = v;
    try {
      nvml::fake_library(fx);
      ADD_FAILURE() << "temperature_c " << v.dump() << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "devices[0].temperature_c: must be a whole number from 0 to 1000, not " +
                    v.dump()),
                std::string::npos)
          << e.what();
    }
  }
  Json fx = fixture("a100_old_driver_r470.json");
  fx["devices"][0]["pcie"] = {{"current_width", -1}};
  EXPECT_THROW(nvml::fake_library(fx), std::invalid_argument);
  fx = fixture("a100_old_driver_r470.json");
  fx["devices"][0]["fabric"] = {{"state", 3}, {"max_version", 2.5}};
  EXPECT_THROW(nvml::fake_library(fx), std::invalid_argument);
  fx = fixture("a100_old_driver_r470.json");
  fx["devices"][0]["errors"] = {{"nvmlDeviceGetName", 15.5}};
  EXPECT_THROW(nvml::fake_library(fx), std::invalid_argument);
  fx = fixture("a100_old_driver_r470.json");
  fx["devices"][0]["temperature_c"] = 1000;
  EXPECT_NO_THROW(nvml::fake_library(fx));
}

}  // namespace
}  // namespace fabkit::probes
