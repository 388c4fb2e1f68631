// Memory health by count (probes/gpu/gpu_memory_counts_judge.cc): the rows remapped for
// uncorrectable errors against NVIDIA's 512, the page-retirement table against its 64, and the
// SRAM and DRAM ECC counts against Azure NHC's limits. The counts come from public `nvidia-smi -q`
// captures (tests/fixtures/nvml/smi_memory/README.md), read into the fake NVML's fixture, then
// gathered and judged by the same code that reads libnvidia-ml.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "probes/gpu/gpu_facts.h"
#include "probes/gpu/nvml_fake.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

std::string read_text(const std::string& name) {
  std::ifstream in(testing::project_fixtures() / "nvml" / "smi_memory" / name);
  EXPECT_TRUE(in) << name;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One count of a capture changed, e.g. set(text, "Uncorrectable Error", "512"): the first row of
// that name (or the nth) gets the new value, so a threshold case is the capture and one edit.
std::string set(std::string text, const std::string& row, const std::string& value, int nth = 0) {
  std::regex re("(\\n *" + row + " *: )[^\\n]*");
  std::sregex_iterator it(text.begin(), text.end(), re), end;
  for (int i = 0; i < nth && it != end; ++i) ++it;
  EXPECT_NE(it, end) << "no row '" << row << "' #" << nth;
  if (it == end) return text;
  const std::smatch& m = *it;
  return text.replace(m.position(0), m.length(0), m[1].str() + value);
}

// The memory sections of `nvidia-smi -q` as the fake NVML's device members: a count row is the
// number NVML answered, an N/A row a call that answered Not Supported (the member left out).
Json smi_memory(const std::string& text) {
  Json dev = Json::object();
  std::istringstream in(text);
  std::string line, section, scope;
  const std::regex row("^( *)([A-Za-z][A-Za-z -]*?) *: (.*)$"), head("^( *)([A-Za-z][A-Za-z ]*)$");
  std::smatch m;
  auto number = [](const std::string& v) -> std::optional<uint64_t> {
    if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return std::stoull(v);
  };
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, head)) {
      if (m[1].length() == 4) section = m[2];
      if (m[1].length() == 8) scope = m[2];
      continue;
    }
    if (!std::regex_match(line, m, row)) continue;
    const std::string key = m[2], value = m[3];
    if (section == "ECC Errors" && (scope == "Volatile" || scope == "Aggregate")) {
      const std::string counter = scope == "Volatile" ? "volatile" : "aggregate";
      const std::string location = key.rfind("SRAM", 0) == 0 ? "sram" : "dram";
      const std::string type =
          key.find("Uncorrectable") != std::string::npos ? "uncorrected" : "corrected";
      // Drivers from R550 print "SRAM Uncorrectable Parity" and "... SEC-DED": both add up.
      auto add = [](Json& j, uint64_t n) { j = (j.is_null() ? 0 : j.get<uint64_t>()) + n; };
      if (auto n = number(value)) {
        add(dev["ecc_location_errors"][location][counter][type], *n);
        add(dev["ecc_errors"][counter][type], *n);
      }
    } else if (section == "Retired Pages" || section == "Retired pages") {
      const char* member = key == "Single Bit ECC"           ? "multiple_single_bit"
                           : key == "Double Bit ECC"         ? "double_bit"
                           : key == "Pending Page Blacklist" ? "pending"
                                                             : nullptr;
      if (!member || value == "N/A") continue;
      if (std::string(member) == "pending")
        dev["retired_pages"]["pending"] = value == "Yes";
      else if (auto n = number(value))
        dev["retired_pages"][member] = *n;
    } else if (section == "Remapped Rows" && m[1].length() == 8) {
      const char* member = key == "Correctable Error"            ? "corrected"
                           : key == "Uncorrectable Error"        ? "uncorrected"
                           : key == "Pending"                    ? "pending"
                           : key == "Remapping Failure Occurred" ? "failure"
                                                                 : nullptr;
      if (!member || value == "N/A") continue;
      if (value == "Yes" || value == "No")
        dev["remapped_rows"][member] = value == "Yes";
      else if (auto n = number(value))
        dev["remapped_rows"][member] = *n;
    }
  }
  return dev;
}

// The A100 of the fake's old-driver fixture, on the capture's driver, with the capture's memory
// sections in place of its own.
Json node_with(const Json& memory) {
  std::ifstream in(testing::project_fixtures() / "nvml" / "a100_old_driver_r470.json");
  Json fx = Json::parse(in);
  fx["driver_version"] = "510.73.08";
  fx["devices"] = Json::array({fx["devices"][0]});
  Json& d = fx["devices"][0];
  for (const char* k : {"ecc_errors", "ecc_location_errors", "retired_pages", "remapped_rows"})
    d.erase(k);
  for (const auto& [k, v] : memory.items()) d[k] = v;
  return fx;
}

struct Judged {
  GpuFacts facts;
  std::vector<Finding> findings;
};

Judged judge(const Json& fx) {
  ProbeContext ctx;
  ctx.roots = SystemRoots::live_system("");
  testing::TempDir dir("device-memory");
  ctx.roots.sys = dir.path() / "sys";
  ctx.roots.proc = dir.path() / "proc";
  nvml::Library lib = nvml::fake_library(fx);
  Judged j;
  j.facts = gather_gpu(ctx, lib);
  j.findings = judge_gpu(j.facts, 1);
  return j;
}

std::vector<Finding> of(const std::vector<Finding>& fs, const std::string& code) {
  std::vector<Finding> out;
  for (const auto& f : fs)
    if (f.code == code) out.push_back(f);
  return out;
}

const char* const kCountCodes[] = {"gpu.remap_uncorrectable_limit", "gpu.retired_pages_full",
                                   "gpu.sram_uncorrected", "gpu.sram_correctable_high",
                                   "gpu.dram_ecc_high"};

std::vector<std::string> count_codes(const std::vector<Finding>& fs) {
  std::vector<std::string> out;
  for (const auto& f : fs)
    for (const char* c : kCountCodes)
      if (f.code == c) out.push_back(f.code + " " + to_string(f.severity));
  return out;
}

TEST(DeviceMemoryCounts, CaptureOfAnA100WithAPendingRemapIsReadAndBelowEveryLimit) {
  const std::string capture = read_text("a100_xid63_pending_remap.txt");
  Judged j = judge(node_with(smi_memory(capture)));
  ASSERT_EQ(j.facts.devices.size(), 1u);
  const GpuHealth& h = j.facts.devices[0].health;
  ASSERT_TRUE(h.ecc.dram);
  EXPECT_EQ(h.ecc.dram->volatile_counts.corrected, 177u);
  EXPECT_EQ(h.ecc.dram->aggregate_counts.corrected, 177u);
  EXPECT_EQ(h.ecc.dram->aggregate_counts.uncorrected, 0u);
  ASSERT_TRUE(h.ecc.sram);
  EXPECT_EQ(h.ecc.sram->volatile_counts.uncorrected, 0u);
  EXPECT_EQ(h.ecc.volatile_counts.corrected, 177u);
  ASSERT_TRUE(h.remapped_rows);
  EXPECT_EQ(h.remapped_rows->corrected, 1u);
  EXPECT_TRUE(h.remapped_rows->pending);
  EXPECT_FALSE(h.retired_pages.pending);  // N/A: Ampere remaps rows instead
  EXPECT_EQ(of(j.findings, "gpu.remap_pending").size(), 1u);
  EXPECT_TRUE(count_codes(j.findings).empty());
  Json out = to_json(h)["ecc"];
  EXPECT_EQ(out["dram"]["volatile"]["corrected"], 177);
  EXPECT_EQ(out["sram"]["aggregate"]["uncorrected"], 0);
}

TEST(DeviceMemoryCounts, RowRemapsForUncorrectableErrorsAtTheLimitFail) {
  std::string capture = set(read_text("a100_xid63_pending_remap.txt"), "Pending", "No");
  Judged at = judge(node_with(smi_memory(set(capture, "Uncorrectable Error", "512"))));
  EXPECT_EQ(count_codes(at.findings),
            std::vector<std::string>{"gpu.remap_uncorrectable_limit fail"});
  Finding f = of(at.findings, "gpu.remap_uncorrectable_limit").at(0);
  EXPECT_NE(f.message.find("512 rows remapped for uncorrectable errors"), std::string::npos)
      << f.message;
  EXPECT_NE(f.fix.find("nvidia-smi -q -d ROW_REMAPPER -i 0"), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("RMA"), std::string::npos);

  Judged below = judge(node_with(smi_memory(set(capture, "Uncorrectable Error", "511"))));
  EXPECT_TRUE(count_codes(below.findings).empty());
  // A failed remap is gpu.remap_failed's RMA already, not a second finding.
  Judged failed = judge(node_with(smi_memory(
      set(set(capture, "Uncorrectable Error", "600"), "Remapping Failure Occurred", "Yes"))));
  EXPECT_TRUE(count_codes(failed.findings).empty());
  EXPECT_EQ(of(failed.findings, "gpu.remap_failed").size(), 1u);
}

TEST(DeviceMemoryCounts, RetiredPageTableFullFailsWithARetirementPending) {
  const std::string snippet = read_text("retired_pages_pending.txt");
  Judged as_captured = judge(node_with(smi_memory(snippet)));
  EXPECT_EQ(as_captured.facts.devices[0].health.retired_pages.multiple_single_bit, 2u);
  EXPECT_TRUE(count_codes(as_captured.findings).empty());  // 2 pages: the table has room

  const std::string full = set(set(snippet, "Single Bit ECC", "60"), "Double Bit ECC", "2");
  Judged pending = judge(node_with(smi_memory(full)));
  EXPECT_EQ(count_codes(pending.findings), std::vector<std::string>{"gpu.retired_pages_full fail"});
  Finding f = of(pending.findings, "gpu.retired_pages_full").at(0);
  EXPECT_NE(f.message.find("62 pages retired (2 double-bit, 60 repeated single-bit) of the 64"),
            std::string::npos)
      << f.message;
  EXPECT_NE(f.fix.find("PAGE_RETIREMENT -i 0"), std::string::npos) << f.fix;

  Judged settled = judge(node_with(smi_memory(set(full, "Pending Page Blacklist", "No"))));
  EXPECT_EQ(count_codes(settled.findings), std::vector<std::string>{"gpu.retired_pages_full warn"});
  EXPECT_NE(of(settled.findings, "gpu.retired_pages_full").at(0).message.find("at most 2 more"),
            std::string::npos);
  Judged room = judge(node_with(smi_memory(set(full, "Double Bit ECC", "1"))));
  EXPECT_TRUE(count_codes(room.findings).empty());  // 61
}

TEST(DeviceMemoryCounts, SramUncorrectableAndCorrectableAboveTheLimitFail) {
  const std::string capture = read_text("a100_xid63_pending_remap.txt");
  // The aggregate row (the second "SRAM Uncorrectable"): an error of the board's past still fails.
  Judged unc = judge(node_with(smi_memory(set(capture, "SRAM Uncorrectable", "1", 1))));
  EXPECT_EQ(count_codes(unc.findings), std::vector<std::string>{"gpu.sram_uncorrected fail"});
  Finding f = of(unc.findings, "gpu.sram_uncorrected").at(0);
  EXPECT_NE(f.message.find("0 since the driver loaded, 1 over the board's life"), std::string::npos)
      << f.message;
  EXPECT_NE(f.fix.find("dcgmi diag -r 3 -i 0"), std::string::npos) << f.fix;

  Judged high = judge(node_with(smi_memory(set(capture, "SRAM Correctable", "10001"))));
  EXPECT_EQ(count_codes(high.findings), std::vector<std::string>{"gpu.sram_correctable_high fail"});
  Judged at = judge(node_with(smi_memory(set(capture, "SRAM Correctable", "10000"))));
  EXPECT_TRUE(count_codes(at.findings).empty());
}

TEST(DeviceMemoryCounts, DramCountsAboveTheLimitFail) {
  const std::string capture = read_text("a100_xid63_pending_remap.txt");
  Judged high = judge(node_with(smi_memory(set(capture, "DRAM Correctable", "20000001", 1))));
  EXPECT_EQ(count_codes(high.findings), std::vector<std::string>{"gpu.dram_ecc_high fail"});
  EXPECT_NE(of(high.findings, "gpu.dram_ecc_high")
                .at(0)
                .message.find("correctable 177 since the driver loaded, 20000001 over the board's "
                              "life"),
            std::string::npos);
  Judged at = judge(node_with(smi_memory(set(capture, "DRAM Correctable", "20000000", 1))));
  EXPECT_TRUE(count_codes(at.findings).empty());
}

// A libnvidia-ml without nvmlDeviceGetMemoryErrorCounter (or a GPU without the locations): the
// totals are still read, the locations are null and recorded as not supported, nothing is judged.
TEST(DeviceMemoryCounts, LocationsNotAnsweredAreNullAndRecorded) {
  Json fx = node_with(smi_memory(read_text("a100_xid63_pending_remap.txt")));
  fx["missing_entry_points"].push_back("nvmlDeviceGetMemoryErrorCounter");
  Judged missing = judge(fx);
  const GpuHealth& h = missing.facts.devices[0].health;
  EXPECT_FALSE(h.ecc.sram);
  EXPECT_FALSE(h.ecc.dram);
  EXPECT_EQ(h.ecc.volatile_counts.corrected, 177u);
  bool recorded = false;
  for (const auto& n : h.not_supported)
    recorded = recorded || n.call == "nvmlDeviceGetMemoryErrorCounter";
  EXPECT_TRUE(recorded);
  EXPECT_TRUE(to_json(h)["ecc"]["sram"].is_null());

  Json no_sram = node_with(smi_memory(read_text("a100_xid63_pending_remap.txt")));
  no_sram["devices"][0]["ecc_location_errors"].erase("sram");
  const GpuHealth& d = judge(no_sram).facts.devices[0].health;
  EXPECT_FALSE(d.ecc.sram);
  ASSERT_TRUE(d.ecc.dram);
  EXPECT_EQ(d.ecc.dram->aggregate_counts.corrected, 177u);
}

}  // namespace
}  // namespace fabkit::probes
