// How a micro-batch reaches the model's device (trainer/app/batch_copy.h): on a GPU pinned and
// queued, so the host does not wait for the kernels already queued; on the host untouched.
#include "trainer/app/batch_copy.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>

#include "trainer/app/device_setup.h"

namespace fabkit::trainer {
namespace {

TEST(BatchCopy, ADeviceBatchIsPinnedAndQueuedAHostOneIsNeither) {
  const BatchCopy device = batch_copy_for(at::Device(at::kCUDA, 1));
  EXPECT_TRUE(device.pin);
  EXPECT_TRUE(device.non_blocking);
  const BatchCopy host = batch_copy_for(at::Device(at::kCPU));
  EXPECT_FALSE(host.pin);
  EXPECT_FALSE(host.non_blocking);
}

TEST(BatchCopy, OnTheHostTheBatchIsUsedAsItIs) {
  const torch::Tensor ids = torch::randint(0, 50, {2, 9}, torch::kInt64);
  const at::Device cpu(at::kCPU);
  const torch::Tensor out = copy_to_device(ids, cpu, batch_copy_for(cpu));
  EXPECT_EQ(out.data_ptr(), ids.data_ptr());  // what .to(cpu) gave before: no copy, no pinning
  EXPECT_FALSE(out.is_pinned());
}

// ---- GPU: runs where a CUDA device exists, skips saying so elsewhere. ----

TEST(BatchCopy, OnTheGpuTheHostDoesNotWaitForQueuedKernels) {
  if (visible_cuda_devices().empty())
    GTEST_SKIP() << "no CUDA device visible to this LibTorch (no GPU or driver here)";
  using Clock = std::chrono::steady_clock;
  const at::Device d(at::kCUDA, 0);
  const torch::Tensor ids = torch::randint(0, 50000, {8, 2048}, torch::kInt64);
  // Warm up: the first pinned block and the CUDA context cost what a step never pays again.
  copy_to_device(ids, d, batch_copy_for(d));
  torch::cuda::synchronize();

  const auto start = Clock::now();
  torch::Tensor a = torch::randn({4096, 4096}, torch::TensorOptions().device(d)) / 64.0;
  torch::Tensor y = a;
  for (int i = 0; i < 120; ++i) y = y.matmul(a);  // ~16 TFLOP queued on the current stream
  const auto queued = Clock::now();
  const torch::Tensor out = copy_to_device(ids, d, batch_copy_for(d));
  const auto copy_returned = Clock::now();
  torch::cuda::synchronize();
  const auto drained = Clock::now();

  using ms = std::chrono::duration<double, std::milli>;
  const double work_ms = ms(drained - start).count();
  const double copy_ms = ms(copy_returned - queued).count();
  ASSERT_GT(work_ms, 40.0) << "the queued work took too little to tell a wait from none";
  EXPECT_LT(copy_ms, work_ms / 4) << "the batch copy waited for the queued kernels: copy "
                                  << copy_ms << " ms of " << work_ms << " ms of queued work";
  EXPECT_TRUE(torch::equal(out.cpu(), ids));
}

}  // namespace
}  // namespace fabkit::trainer
