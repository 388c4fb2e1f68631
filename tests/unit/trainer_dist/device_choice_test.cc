// Which GPU a local rank takes: the profile's GPU<->NIC locality against the visible devices.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "trainer/distributed/device_choice.h"

namespace fabkit::trainer {
namespace {

// An 8-GPU node with 4 NICs, two GPUs under each NIC's PCIe switch (PIX), the others further.
std::vector<VisibleGpu> eight_gpus() {
  std::vector<VisibleGpu> v;
  const char* bus[] = {"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0",
                       "00000000:5D:00.0", "00000000:9A:00.0", "00000000:AB:00.0",
                       "00000000:BA:00.0", "00000000:DB:00.0"};
  for (int i = 0; i < 8; ++i) v.push_back({i, bus[i]});
  return v;
}

std::vector<GpuNicLocality> eight_gpu_locality() {
  return {{"0000:18:00.0", "mlx5_0", "PIX"}, {"0000:2a:00.0", "mlx5_0", "PXB"},
          {"0000:3a:00.0", "mlx5_1", "PIX"}, {"0000:5d:00.0", "mlx5_1", "PXB"},
          {"0000:9a:00.0", "mlx5_2", "PIX"}, {"0000:ab:00.0", "mlx5_2", "PXB"},
          {"0000:ba:00.0", "mlx5_3", "PIX"}, {"0000:db:00.0", "mlx5_3", "PXB"}};
}

TEST(DeviceChoice, BusIdsCompareAcrossCudaAndSysfsSpellings) {
  EXPECT_EQ(normalize_bus_id("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_bus_id("0000:3b:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_bus_id("3B:00.0"), "0000:3b:00.0");
}

TEST(DeviceChoice, OneRankPerGpuIsLocalRank) {
  for (int r = 0; r < 8; ++r) {
    const DeviceChoice c = choose_cuda_device(r, 8, eight_gpus(), eight_gpu_locality());
    EXPECT_EQ(c.index, r);
    EXPECT_NE(c.reason.find("LOCAL_RANK"), std::string::npos) << c.reason;
  }
}

TEST(DeviceChoice, FewerRanksThanGpusSpreadOverTheNicsNearestGpus) {
  // 4 ranks on 8 GPUs: LOCAL_RANK would take GPUs 0-3 (two NICs' worth); locality gives each
  // NIC its PIX GPU: 0, 2, 4, 6.
  std::vector<int> got;
  for (int r = 0; r < 4; ++r)
    got.push_back(choose_cuda_device(r, 4, eight_gpus(), eight_gpu_locality()).index);
  EXPECT_EQ(got, (std::vector<int>{0, 2, 4, 6}));
  const DeviceChoice c = choose_cuda_device(1, 4, eight_gpus(), eight_gpu_locality());
  EXPECT_EQ(c.bus_id, "0000:3a:00.0");
  EXPECT_NE(c.reason.find("PIX to mlx5_1"), std::string::npos) << c.reason;
  // 2 ranks: the two NICs first in order of nearness (all PIX: name order), one GPU each.
  EXPECT_EQ(choose_cuda_device(1, 2, eight_gpus(), eight_gpu_locality()).index, 2);
}

TEST(DeviceChoice, CudaVisibleDevicesRenumberTheGpus) {
  // CUDA_VISIBLE_DEVICES=4,5,6,7: indices 0-3 are the physical GPUs 4-7. One rank on mlx5_3's
  // side would be wrong for LOCAL_RANK only if it ignored bus ids; 2 ranks take 9a (PIX mlx5_2)
  // and ba (PIX mlx5_3): visible indices 0 and 2.
  auto all = eight_gpus();
  std::vector<VisibleGpu> visible;
  for (int i = 4; i < 8; ++i) visible.push_back({i - 4, all[i].bus_id});
  EXPECT_EQ(choose_cuda_device(0, 2, visible, eight_gpu_locality()).index, 0);
  EXPECT_EQ(choose_cuda_device(1, 2, visible, eight_gpu_locality()).index, 2);
}

TEST(DeviceChoice, WithoutLocalityItIsLocalRank) {
  const DeviceChoice c = choose_cuda_device(1, 2, eight_gpus(), {});
  EXPECT_EQ(c.index, 1);
  EXPECT_NE(c.reason.find("no GPU<->NIC locality"), std::string::npos) << c.reason;
}

TEST(DeviceChoice, MoreRanksThanGpusNamesBothCounts) {
  try {
    choose_cuda_device(2, 3, {{0, "0000:18:00.0"}, {1, "0000:2a:00.0"}}, {});
    FAIL() << "3 ranks on 2 GPUs were accepted";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("3 local ranks"), std::string::npos) << m;
    EXPECT_NE(m.find("2 visible CUDA device"), std::string::npos) << m;
  }
}

// Slurm --gpus-per-task=1 / --gpu-bind: each of 8 tasks sees one GPU, its own, at index 0.
TEST(DeviceChoice, OneVisibleGpuPerTaskIsThatGpu) {
  for (int r = 0; r < 8; ++r) {
    const std::string cvd = std::to_string(r);
    const DeviceChoice c = choose_cuda_device(
        r, 8, {{0, eight_gpus()[static_cast<size_t>(r)].bus_id}}, eight_gpu_locality(), cvd);
    EXPECT_EQ(c.index, 0);
    EXPECT_EQ(c.bus_id, normalize_bus_id(eight_gpus()[static_cast<size_t>(r)].bus_id));
    EXPECT_NE(c.reason.find("the one GPU this task sees"), std::string::npos) << c.reason;
    EXPECT_NE(c.reason.find("CUDA_VISIBLE_DEVICES='" + cvd + "'"), std::string::npos) << c.reason;
    EXPECT_NE(c.reason.find("local rank " + std::to_string(r) + " of 8"), std::string::npos)
        << c.reason;
  }
}

TEST(DeviceChoice, OneVisibleGpuByUuidOrMigOrCgroup) {
  const std::vector<VisibleGpu> one{{0, "00000000:3A:00.0"}};
  DeviceChoice c = choose_cuda_device(5, 8, one, {}, std::string("GPU-8932f937-d72c-4106"));
  EXPECT_EQ(c.index, 0);
  EXPECT_NE(c.reason.find("a GPU by UUID"), std::string::npos) << c.reason;
  c = choose_cuda_device(2, 4, one, {}, std::string("MIG-GPU-8932f937-d72c-4106/1/0"));
  EXPECT_EQ(c.index, 0);
  EXPECT_NE(c.reason.find("a MIG device"), std::string::npos) << c.reason;
  // A cgroup-constrained GRES without CUDA_VISIBLE_DEVICES: the other GPUs are simply absent.
  c = choose_cuda_device(7, 8, one, {}, std::nullopt);
  EXPECT_EQ(c.index, 0);
  EXPECT_NE(c.reason.find("device cgroup"), std::string::npos) << c.reason;
}

TEST(DeviceChoice, SomeButNotEnoughVisibleGpusIsRefusedWithTheFix) {
  try {
    choose_cuda_device(1, 8, {{0, "0000:18:00.0"}, {1, "0000:2a:00.0"}}, {}, std::string("0,1"));
    FAIL() << "8 ranks on 2 visible GPUs were accepted";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("8 local ranks"), std::string::npos) << m;
    EXPECT_NE(m.find("2 visible CUDA device"), std::string::npos) << m;
    EXPECT_NE(m.find("CUDA_VISIBLE_DEVICES='0,1'"), std::string::npos) << m;
    EXPECT_NE(m.find("--gpus-per-task=1"), std::string::npos) << m;
  }
}

// CUDA stops at the first entry it cannot resolve: "0,7" on a node where 7 does not exist
// leaves one GPU visible, which must not read as "one GPU per task".
TEST(DeviceChoice, AnEntryCudaCouldNotResolveIsNamed) {
  const std::vector<VisibleGpu> one{{0, "0000:18:00.0"}};
  for (const std::string cvd : {"0,7", "GPU-aaaa, GPU-bbbb", "0,1,2,3,4,5,6,7"}) {
    try {
      choose_cuda_device(0, 8, one, {}, cvd);
      FAIL() << cvd << " with one visible GPU was accepted";
    } catch (const UsageError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("CUDA sees 1"), std::string::npos) << m;
      EXPECT_NE(m.find("did not resolve"), std::string::npos) << m;
      EXPECT_NE(m.find("'" + cuda_visible_entries(cvd)[1] + "'"), std::string::npos) << m;
    }
  }
  EXPECT_EQ(cuda_visible_entries(" 0, GPU-ab ,,MIG-x/1/0"),
            (std::vector<std::string>{"0", "GPU-ab", "MIG-x/1/0"}));
  EXPECT_TRUE(cuda_visible_entries("").empty());
}

}  // namespace
}  // namespace fabkit::trainer
