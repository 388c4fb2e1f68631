// The GPU probe's live NVML facts against `nvidia-smi -q -x` (a separate program over the same
// driver): ECC mode, the SRAM and DRAM ECC counts, clock event reasons, PCIe generation/width
// current and max, remapped rows.
// On a machine where NVML lists no GPU it skips, saying why; where it lists GPUs it passes or
// fails for real (docs/gpu-node.md). The reader of nvidia-smi's XML is tested on fixtures in the
// layouts drivers write (event-reason names since R535, throttle-reason names before).
#include <gtest/gtest.h>

#include <cstdio>

#include "probes/gpu/gpu_facts.h"
#include "tests/unit/gpu/nvidia_smi_xml.h"

namespace fabkit::probes {
namespace {

using testing::parse_nvidia_smi_xml;
using testing::SmiGpu;

// Trimmed to the elements compared, in the layout of nvidia-smi 555 (nvsmi_device_v12.dtd).
const char* kSmiV12 = R"(<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
  <driver_version>555.42.06</driver_version>
  <gpu id="00000000:18:00.0">
    <pci>
      <pci_gpu_link_info>
        <pcie_gen>
          <max_link_gen>5</max_link_gen>
          <current_link_gen>1</current_link_gen>
          <device_current_link_gen>1</device_current_link_gen>
          <max_device_link_gen>5</max_device_link_gen>
          <max_host_link_gen>5</max_host_link_gen>
        </pcie_gen>
        <link_widths>
          <max_link_width>16x</max_link_width>
          <current_link_width>16x</current_link_width>
        </link_widths>
      </pci_gpu_link_info>
    </pci>
    <clocks_event_reasons>
      <clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>
      <clocks_event_reason_applications_clocks_setting>Not Active</clocks_event_reason_applications_clocks_setting>
      <clocks_event_reason_sw_power_cap>Not Active</clocks_event_reason_sw_power_cap>
      <clocks_event_reason_hw_slowdown>Active</clocks_event_reason_hw_slowdown>
      <clocks_event_reason_hw_thermal_slowdown>Not Active</clocks_event_reason_hw_thermal_slowdown>
      <clocks_event_reason_hw_power_brake_slowdown>Not Active</clocks_event_reason_hw_power_brake_slowdown>
      <clocks_event_reason_sync_boost>Not Active</clocks_event_reason_sync_boost>
      <clocks_event_reason_sw_thermal_slowdown>Not Active</clocks_event_reason_sw_thermal_slowdown>
      <clocks_event_reason_display_clocks_setting>Not Active</clocks_event_reason_display_clocks_setting>
    </clocks_event_reasons>
    <ecc_mode>
      <current_ecc>Enabled</current_ecc>
      <pending_ecc>Enabled</pending_ecc>
    </ecc_mode>
    <ecc_errors>
      <volatile>
        <sram_correctable>0</sram_correctable>
        <sram_uncorrectable_parity>0</sram_uncorrectable_parity>
        <sram_uncorrectable_secded>0</sram_uncorrectable_secded>
        <dram_correctable>0</dram_correctable>
        <dram_uncorrectable>0</dram_uncorrectable>
      </volatile>
      <aggregate>
        <sram_correctable>0</sram_correctable>
        <sram_uncorrectable_parity>0</sram_uncorrectable_parity>
        <sram_uncorrectable_secded>0</sram_uncorrectable_secded>
        <dram_correctable>0</dram_correctable>
        <dram_uncorrectable>0</dram_uncorrectable>
      </aggregate>
    </ecc_errors>
    <remapped_rows>
      <remapped_row_corr>0</remapped_row_corr>
      <remapped_row_unc>1</remapped_row_unc>
      <remapped_row_pending>Yes</remapped_row_pending>
      <remapped_row_failure>No</remapped_row_failure>
    </remapped_rows>
  </gpu>
</nvidia_smi_log>
)";

// An R470-era GPU with MIG on: throttle-reason names, remapped rows N/A, ECC N/A on a card without.
const char* kSmiOld = R"(<?xml version="1.0" ?>
<nvidia_smi_log>
  <gpu id="00000000:07:00.0">
    <pci><pci_gpu_link_info>
      <pcie_gen><max_link_gen>4</max_link_gen><current_link_gen>4</current_link_gen></pcie_gen>
      <link_widths><max_link_width>16x</max_link_width><current_link_width>8x</current_link_width></link_widths>
    </pci_gpu_link_info></pci>
    <clocks_throttle_reasons>
      <clocks_throttle_reason_gpu_idle>Not Active</clocks_throttle_reason_gpu_idle>
      <clocks_throttle_reason_sw_thermal_slowdown>Active</clocks_throttle_reason_sw_thermal_slowdown>
    </clocks_throttle_reasons>
    <ecc_mode><current_ecc>N/A</current_ecc><pending_ecc>N/A</pending_ecc></ecc_mode>
    <remapped_rows>N/A</remapped_rows>
  </gpu>
</nvidia_smi_log>
)";

TEST(NvidiaSmiXml, ReadsTheFieldsTheComparisonUses) {
  auto gpus = parse_nvidia_smi_xml(kSmiV12);
  ASSERT_EQ(gpus.count("0000:18:00.0"), 1u);
  const SmiGpu& g = gpus["0000:18:00.0"];
  EXPECT_EQ(g.ecc_enabled, true);
  EXPECT_EQ(g.reasons, (std::set<std::string>{"gpu_idle", "hw_slowdown"}));
  EXPECT_EQ(g.pcie_gen_current, 1);
  EXPECT_EQ(g.pcie_gen_max, 5);
  EXPECT_EQ(g.pcie_width_current, 16);
  EXPECT_TRUE(g.remap_known);
  EXPECT_EQ(g.remap_uncorrected, 1);
  EXPECT_EQ(g.remap_pending, true);
  EXPECT_EQ(g.remap_failure, false);
  EXPECT_EQ(g.ecc_volatile.sram_uncorrected, 0u);  // parity + SEC-DED
  EXPECT_EQ(g.ecc_aggregate.dram_corrected, 0u);

  auto old = parse_nvidia_smi_xml(kSmiOld);
  const SmiGpu& o = old.at("0000:07:00.0");
  EXPECT_FALSE(o.ecc_enabled);
  EXPECT_EQ(o.reasons, (std::set<std::string>{"sw_thermal_slowdown"}));
  EXPECT_EQ(o.pcie_width_current, 8);
  EXPECT_FALSE(o.remap_known);
  EXPECT_FALSE(o.ecc_volatile.sram_corrected);  // N/A
  EXPECT_THROW(parse_nvidia_smi_xml("<nvidia_smi_log><gpu"), std::invalid_argument);
  EXPECT_THROW(parse_nvidia_smi_xml("<other/>"), std::invalid_argument);
}

// Every reason name the probe gives is one nvidia-smi writes (so the sets compare).
TEST(NvidiaSmiXml, ProbeReasonNamesAreNvidiaSmis) {
  auto smi = parse_nvidia_smi_xml(kSmiV12).at("0000:18:00.0");
  EXPECT_EQ(clock_event_reason_names(nvml::kClocksGpuIdle | nvml::kClocksHwSlowdown),
            (std::vector<std::string>{"gpu_idle", "hw_slowdown"}));
  auto all = clock_event_reason_names(0x1ff);
  for (const char* n :
       {"applications_clocks_setting", "sw_power_cap", "hw_thermal_slowdown",
        "hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown", "display_clocks_setting"})
    EXPECT_NE(std::find(all.begin(), all.end(), n), all.end()) << n;
}

std::string run(const char* cmd, int* status) {
  std::string out;
  FILE* p = ::popen(cmd, "r");
  if (!p) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = ::pclose(p);
  return out;
}

std::set<std::string> reasons_of(const GpuDevice& d) {
  std::set<std::string> s;
  if (d.health.clocks)
    for (const auto& n : clock_event_reason_names(d.health.clocks->mask)) s.insert(n);
  return s;
}

TEST(NvmlAgainstNvidiaSmi, LiveFactsMatchNvidiaSmiQ) {
  ProbeContext ctx;
  ctx.roots = SystemRoots::live_system("");
  GpuFacts before = gather_gpu(ctx);
  if (!before.driver_loaded)
    GTEST_SKIP() << "NVML lists no GPU here: " << before.nvml_error.value_or("driver not loaded")
                 << " (runs on a GPU node)";
  if (before.devices.empty()) GTEST_SKIP() << "NVML lists no GPU here (driver loaded, count 0)";
  int status = 0;
  std::string xml = run("nvidia-smi -q -x 2>/dev/null", &status);
  if (status != 0 || xml.empty())
    GTEST_SKIP() << "NVML lists " << before.devices.size()
                 << " GPU(s) but `nvidia-smi -q -x` did not run (status " << status
                 << "): install nvidia-smi to compare";
  GpuFacts after = gather_gpu(ctx);  // clocks and link speed move with load: either read counts
  auto smi = parse_nvidia_smi_xml(xml);
  ASSERT_EQ(smi.size(), before.devices.size()) << "nvidia-smi and NVML list different GPUs";
  for (size_t i = 0; i < before.devices.size(); ++i) {
    const GpuDevice& d = before.devices[i];
    const GpuDevice& d2 = after.devices.at(i);
    SCOPED_TRACE("GPU " + std::to_string(d.index) + " " + d.bus_id);
    ASSERT_EQ(smi.count(d.bus_id), 1u) << "nvidia-smi has no GPU at " << d.bus_id;
    const SmiGpu& s = smi.at(d.bus_id);
    const GpuHealth& h = d.health;
    EXPECT_EQ(h.ecc.enabled, s.ecc_enabled) << "ECC mode (N/A = not supported)";
    ASSERT_TRUE(s.reasons) << "nvidia-smi printed no clock event reasons";
    EXPECT_TRUE(*s.reasons == reasons_of(d) || *s.reasons == reasons_of(d2))
        << "clock event reasons differ from both NVML reads";
    EXPECT_EQ(h.pcie_max.generation, s.pcie_gen_max);
    EXPECT_EQ(h.pcie_max.width, s.pcie_width_max);
    EXPECT_TRUE(h.pcie_current.width == s.pcie_width_current ||
                d2.health.pcie_current.width == s.pcie_width_current);
    EXPECT_TRUE(h.pcie_current.generation == s.pcie_gen_current ||
                d2.health.pcie_current.generation == s.pcie_gen_current);
    // ECC counts rise between the two programs' reads only on a GPU that is failing right now.
    for (auto [name, loc] : {std::pair{"SRAM", &h.ecc.sram}, std::pair{"DRAM", &h.ecc.dram}}) {
      if (!*loc) continue;
      const bool sram = std::string(name) == "SRAM";
      for (auto [scope, nvml, smi_scope] :
           {std::tuple{"volatile", &(*loc)->volatile_counts, &s.ecc_volatile},
            std::tuple{"aggregate", &(*loc)->aggregate_counts, &s.ecc_aggregate}}) {
        EXPECT_EQ(nvml->corrected, sram ? smi_scope->sram_corrected : smi_scope->dram_corrected)
            << name << " correctable, " << scope;
        EXPECT_EQ(nvml->uncorrected,
                  sram ? smi_scope->sram_uncorrected : smi_scope->dram_uncorrected)
            << name << " uncorrectable, " << scope;
      }
    }
    EXPECT_EQ(h.remapped_rows.has_value(), s.remap_known) << "remapped rows (N/A under MIG)";
    if (h.remapped_rows && s.remap_known) {
      EXPECT_EQ(int(h.remapped_rows->corrected), s.remap_corrected.value_or(-1));
      EXPECT_EQ(int(h.remapped_rows->uncorrected), s.remap_uncorrected.value_or(-1));
      EXPECT_EQ(h.remapped_rows->pending, s.remap_pending.value_or(!h.remapped_rows->pending));
      EXPECT_EQ(h.remapped_rows->failure, s.remap_failure.value_or(!h.remapped_rows->failure));
    }
  }
}

}  // namespace
}  // namespace fabkit::probes
