// The GPU probe: the real NVML loader on this machine (whatever it has), and the gather + judge
// through the fixture-driven NVML table (GPUs, errors, NUMA fallbacks) so every path runs without
// a driver.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "probes/gpu/gpu_facts.h"
#include "probes/gpu/nvml_fake.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

std::string read_first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// NVIDIA display/3D controllers on this machine's PCI bus, from sysfs (independent of NVML).
int nvidia_gpus_in_sysfs() {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/bus/pci/devices", ec)) {
    std::string cls = read_first_line(e.path() / "class");
    if (read_first_line(e.path() / "vendor") == "0x10de" && cls.rfind("0x03", 0) == 0) ++n;
  }
  return n;
}

int lines_of(const char* cmd) {
  FILE* p = ::popen(cmd, "r");
  if (!p) return -1;
  int n = 0;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) n += buf[0] == 'G' ? 1 : 0;  // "GPU 0: ..."
  return ::pclose(p) == 0 ? n : -1;
}

ProbeContext live_ctx() {
  ProbeContext ctx;
  ctx.roots = SystemRoots::live_system("");
  return ctx;
}

TEST(GpuProbe, LiveNvmlAgreesWithThisMachine) {
  GpuFacts f = gather_gpu(live_ctx());
  int on_bus = nvidia_gpus_in_sysfs();
  auto fs = judge_gpu(f, on_bus);
  ASSERT_FALSE(fs.empty());
  EXPECT_LT(f.query_ms, 2000.0);
  if (!f.driver_loaded) {
    // A CPU node (or a container without the driver): named, and info unless GPUs are on the bus.
    ASSERT_TRUE(f.nvml_error);
    EXPECT_EQ(f.count, 0);
    if (!f.nvml_loaded) {
      EXPECT_NE(f.nvml_error->find("libnvidia-ml.so.1"), std::string::npos) << *f.nvml_error;
    }
    EXPECT_EQ(fs[0].code, on_bus == 0 ? "gpu.no_driver" : "gpu.driver_missing") << fs[0].message;
    EXPECT_EQ(to_json(f)["devices"], Json::array());
    if (on_bus == 0) GTEST_SKIP() << "no NVIDIA driver here (" << *f.nvml_error
                                  << "): the GPU path ran through the NVML fake only";
    return;
  }
  // A GPU node: NVML's inventory matches nvidia-smi (also NVML, but a separate program) and sysfs.
  EXPECT_EQ(fs[0].code, "gpu.found");
  EXPECT_GT(f.count, 0);
  ASSERT_TRUE(f.driver_version);
  int smi = lines_of("nvidia-smi -L 2>/dev/null");
  if (smi >= 0) {
    EXPECT_EQ(f.count, smi) << "nvidia-smi -L lists " << smi;
  }
  for (const auto& d : f.devices) {
    EXPECT_TRUE(d.errors.empty()) << d.errors.front();
    EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u) << d.uuid;
    EXPECT_EQ(read_first_line("/sys/bus/pci/devices/" + d.bus_id + "/vendor"), "0x10de") << d.bus_id;
  }
}

TEST(GpuProbe, SysrootSkipsNvml) {
  testing::TempDir root("gpu-sysroot");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(root.path());
  GpuFacts f = gather_gpu(ctx);
  EXPECT_TRUE(f.skipped);
  EXPECT_FALSE(f.nvml_loaded);
  auto fs = judge_gpu(f, std::nullopt);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "gpu.skipped");
}

TEST(NvmlLoader, MissingLibraryAndMissingSymbolsAreNamedNotThrown) {
  nvml::Library none = nvml::load_library("libfabkit-no-such-nvml.so.1");
  EXPECT_FALSE(none.loaded);
  EXPECT_NE(none.error.find("dlopen libfabkit-no-such-nvml.so.1"), std::string::npos) << none.error;
  // A real library without NVML's symbols: the first missing entry point is named.
  nvml::Library libc = nvml::load_library("libc.so.6");
  EXPECT_FALSE(libc.loaded);
  EXPECT_NE(libc.error.find("dlsym nvmlInit_v2"), std::string::npos) << libc.error;
  EXPECT_EQ(libc.table.init, nullptr);
}

// Two H100s as an 8-GPU node's first two would show them (values in nvidia-smi -q's terms).
Json two_h100s() {
  return Json::parse(R"({
    "driver_version": "580.95.05", "cuda_driver_version": 13000,
    "devices": [
      {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-5b3f7a1e-0c52-8a7e-3a0e-41d2d8c0a001",
       "bus_id": "00000000:18:00.0", "numa_node": 0, "memory_total": 85520809984,
       "compute_capability": "9.0"},
      {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-5b3f7a1e-0c52-8a7e-3a0e-41d2d8c0a002",
       "bus_id": "00000000:9A:00.0", "numa_node": null, "memory_total": 85520809984,
       "compute_capability": "9.0"}]})");
}

// A live-looking context whose sysfs is a fixture tree (NVML itself is the fake).
struct FakeNode {
  testing::TempDir dir{"gpu-nvml"};
  ProbeContext ctx;
  FakeNode() {
    ctx.roots = SystemRoots::live_system("");
    ctx.roots.sys = dir.path() / "sys";
    auto dev = ctx.roots.sys / "bus/pci/devices/0000:9a:00.0";
    std::filesystem::create_directories(dev);
    std::ofstream(dev / "numa_node") << "1\n";
  }
};

TEST(GpuProbe, InventoryFromNvmlWithSysfsNumaFallback) {
  FakeNode node;
  nvml::Library lib = nvml::fake_library(two_h100s());
  GpuFacts f = gather_gpu(node.ctx, lib);
  EXPECT_TRUE(f.nvml_loaded);
  EXPECT_TRUE(f.driver_loaded);
  EXPECT_EQ(f.driver_version, "580.95.05");
  EXPECT_EQ(f.cuda_driver_version, "13.0");
  ASSERT_EQ(f.count, 2);
  ASSERT_EQ(f.devices.size(), 2u);
  EXPECT_EQ(f.devices[0].bus_id, "0000:18:00.0");  // NVML's 8-digit upper-case form normalised
  EXPECT_EQ(f.devices[0].numa_node, 0);
  EXPECT_EQ(f.devices[0].numa_source, "nvml");
  EXPECT_EQ(f.devices[1].bus_id, "0000:9a:00.0");
  EXPECT_EQ(f.devices[1].numa_node, 1);  // NVML: Not Supported -> the PCI device's sysfs numa_node
  EXPECT_EQ(f.devices[1].numa_source, "sysfs");
  EXPECT_EQ(f.devices[1].compute_capability, "9.0");
  EXPECT_EQ(f.devices[1].memory_bytes, 85520809984ull);
  EXPECT_EQ(nvml::fake_calls().init, 1);
  EXPECT_EQ(nvml::fake_calls().shutdown, 1);  // every init is paired with a shutdown

  auto fs = judge_gpu(f, 2);
  // found, a device line per GPU, and the health calls this fixture (no health members) leaves
  // unanswered, as one info line (gpu_health_test.cc covers the health facts).
  ASSERT_EQ(fs.size(), 4u);
  EXPECT_EQ(fs[3].code, "gpu.not_supported");
  EXPECT_EQ(fs[0].code, "gpu.found");
  EXPECT_EQ(fs[0].message, "2 NVIDIA GPU(s), driver 580.95.05, CUDA driver API 13.0");
  EXPECT_EQ(fs[2].code, "gpu.device");
  EXPECT_EQ(fs[2].subject, "0000:9a:00.0");
  EXPECT_NE(fs[2].message.find("NUMA 1 (sysfs)"), std::string::npos) << fs[2].message;
  Json j = to_json(f);
  EXPECT_EQ(j["devices"][1]["numa_source"], "sysfs");
  EXPECT_EQ(j["count"], 2);
}

TEST(GpuProbe, OldDriverWithoutNumaEntryPointUsesSysfs) {
  FakeNode node;
  Json fx = two_h100s();
  fx["numa_entry_point"] = false;
  nvml::Library lib = nvml::fake_library(fx);
  GpuFacts f = gather_gpu(node.ctx, lib);
  EXPECT_FALSE(f.devices[0].numa_node);  // no sysfs entry for 0000:18:00.0 in the tree: unknown
  EXPECT_EQ(f.devices[0].numa_source, "");
  EXPECT_EQ(f.devices[1].numa_node, 1);
  EXPECT_TRUE(f.devices[0].errors.empty());
}

TEST(GpuProbe, NoLibraryIsNoDriverInfoButWarnsWhenGpusAreOnTheBus) {
  FakeNode node;
  nvml::Library lib = nvml::fake_library(Json{
      {"load_error",
       "dlopen libnvidia-ml.so.1: libnvidia-ml.so.1: cannot open shared object file: No such "
       "file or directory"}});
  GpuFacts f = gather_gpu(node.ctx, lib);
  EXPECT_FALSE(f.nvml_loaded);
  auto fs = judge_gpu(f, 0);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "gpu.no_driver");
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
  EXPECT_NE(fs[0].message.find("cannot open shared object file"), std::string::npos);
  auto with_gpus = judge_gpu(f, 8);
  EXPECT_EQ(with_gpus[0].code, "gpu.driver_missing");
  EXPECT_EQ(with_gpus[0].severity, Severity::kWarn);
  EXPECT_NE(with_gpus[0].message.find("8 NVIDIA GPU(s) are on the PCI bus"), std::string::npos);
  EXPECT_NE(with_gpus[0].fix.find("--gpus all"), std::string::npos);
}

TEST(GpuProbe, InitErrorsAreNamedWithNvmlErrorString) {
  FakeNode node;
  nvml::Library not_loaded = nvml::fake_library(Json{{"init", nvml::kErrorDriverNotLoaded}});
  GpuFacts f = gather_gpu(node.ctx, not_loaded);
  EXPECT_TRUE(f.nvml_loaded);
  EXPECT_FALSE(f.driver_loaded);
  EXPECT_EQ(f.nvml_error, "nvmlInit_v2: Driver Not Loaded (NVML error 9)");
  EXPECT_EQ(nvml::fake_calls().shutdown, 0);  // nothing to shut down after a failed init
  EXPECT_EQ(judge_gpu(f, 0)[0].code, "gpu.no_driver");
  EXPECT_EQ(judge_gpu(f, 4)[0].code, "gpu.driver_missing");

  nvml::Library mismatch = nvml::fake_library(Json{{"init", nvml::kErrorLibRmVersionMismatch}});
  GpuFacts m = gather_gpu(node.ctx, mismatch);
  auto fs = judge_gpu(m, 0);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "gpu.nvml_error");  // a broken driver install, not a CPU node
  EXPECT_EQ(fs[0].severity, Severity::kWarn);
  EXPECT_NE(fs[0].message.find("NVML/RM version mismatch"), std::string::npos) << fs[0].message;
}

TEST(GpuProbe, LostGpuAndFewerGpusThanTheBusWarn) {
  FakeNode node;
  Json fx = two_h100s();
  fx["devices"][1]["errors"] = {{"nvmlDeviceGetName", nvml::kErrorGpuIsLost},
                                {"nvmlDeviceGetMemoryInfo", nvml::kErrorGpuIsLost}};
  nvml::Library lib = nvml::fake_library(fx);
  GpuFacts f = gather_gpu(node.ctx, lib);
  ASSERT_EQ(f.devices[1].errors.size(), 2u);
  EXPECT_EQ(f.devices[1].errors[0], "nvmlDeviceGetName: GPU is lost (NVML error 15)");
  EXPECT_FALSE(f.devices[1].memory_bytes);
  auto fs = judge_gpu(f, 8);
  std::vector<std::string> codes;
  for (const auto& x : fs) codes.push_back(x.code);
  // GPU is lost is also a fail of its own (gpu.lost: drain), beside the calls that failed.
  EXPECT_EQ(codes,
            (std::vector<std::string>{"gpu.found", "gpu.device", "gpu.device", "gpu.query_failed",
                                      "gpu.lost", "gpu.not_supported", "gpu.count_mismatch"}));
  EXPECT_EQ(fs[3].subject, "0000:9a:00.0");
  EXPECT_EQ(fs[4].subject, "0000:9a:00.0");
  EXPECT_EQ(fs[4].severity, Severity::kFail);
  EXPECT_NE(fs[6].message.find("2 GPU(s) but 8 NVIDIA GPU(s)"), std::string::npos) << fs[6].message;

  fx = two_h100s();
  fx["count_error"] = nvml::kErrorUnknown;
  nvml::Library broken = nvml::fake_library(fx);
  GpuFacts b = gather_gpu(node.ctx, broken);
  ASSERT_EQ(b.errors.size(), 1u);
  EXPECT_EQ(b.errors[0], "nvmlDeviceGetCount_v2: Unknown Error (NVML error 999)");
}

TEST(NvmlFake, MalformedFixtureNamesTheField) {
  Json fx = two_h100s();
  fx["devices"][1]["compute_capability"] = "nine";
  try {
    nvml::fake_library(fx);
    FAIL() << "accepted a bad compute_capability";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("devices[1].compute_capability"), std::string::npos)
        << e.what();
  }
  fx = two_h100s();
  fx["devices"][0].erase("uuid");
  EXPECT_THROW(nvml::fake_library(fx), std::invalid_argument);
}

}  // namespace
}  // namespace fabkit::probes
