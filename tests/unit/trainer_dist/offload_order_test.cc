// The offload copies' ordering against the compute stream, checked without a GPU: a fake
// OffloadStreams runs the two "streams" as queues and lets the side one run as far ahead as its
// event waits allow (the worst case a GPU may choose), so a missing wait shows as wrong data.
// The same scenario on a real GPU: ActivationOffload.OnTheGpuThePrefetchWaitsForItsBuffersLastUse.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <deque>
#include <functional>
#include <utility>

#include "trainer/app/device_setup.h"
#include "trainer/parallel/activation_offload.h"

namespace fabkit::trainer {
namespace {

// Two in-order queues and their events.
class TwoStreams {
 public:
  struct Item {
    std::function<void()> run;
    int record = -1;  // this item is an event's record
    int wait = -1;    // this item waits for that event
  };
  std::deque<Item> compute, side;

  int new_event() {
    fired_.push_back(false);
    return static_cast<int>(fired_.size()) - 1;
  }
  // Runs every queued item; the side stream first whenever it can go on (the order that exposes
  // a missing wait). False when both queues are stuck on waits (a deadlock).
  bool drain() {
    while (step(side) || step(compute)) {
    }
    return compute.empty() && side.empty();
  }

 private:
  bool step(std::deque<Item>& q) {
    if (q.empty()) return false;
    Item& it = q.front();
    if (it.wait >= 0 && !fired_[static_cast<size_t>(it.wait)]) return false;
    if (it.record >= 0) fired_[static_cast<size_t>(it.record)] = true;
    if (it.run) it.run();
    q.pop_front();
    return true;
  }
  std::vector<bool> fired_;
};

class FakeOffloadStreams : public OffloadStreams {
 public:
  explicit FakeOffloadStreams(TwoStreams& s) : s_(s) {}
  // The block the "allocator" hands out next for device memory (a freed one, reused).
  at::Tensor next_device_block;

  Event record_on_compute() override { return record(s_.compute); }
  Event record_on_side() override { return record(s_.side); }
  void side_waits(const Event& e) override { s_.side.push_back({nullptr, -1, id(e)}); }
  void compute_waits(const Event& e) override { s_.compute.push_back({nullptr, -1, id(e)}); }
  at::Tensor pinned_host_like(const at::Tensor& x) override { return at::empty_like(x); }
  at::Tensor device_like(const at::Tensor& host) override {
    if (next_device_block.defined()) return std::exchange(next_device_block, at::Tensor());
    return at::empty_like(host);
  }
  void copy_on_side(at::Tensor& dst, const at::Tensor& src) override {
    s_.side.push_back({[dst, src]() mutable { dst.copy_(src); }});
  }
  void side_uses(const at::Tensor&) override {}

 private:
  Event record(std::deque<TwoStreams::Item>& q) {
    const int e = s_.new_event();
    q.push_back({nullptr, e, -1});
    return std::make_shared<int>(e);
  }
  static int id(const Event& e) { return *static_cast<int*>(e.get()); }
  TwoStreams& s_;
};

TEST(ActivationOffload, PrefetchWaitsForTheComputeStreamsLastUseOfItsBuffer) {
  TwoStreams streams;
  auto fake = std::make_unique<FakeOffloadStreams>(streams);
  FakeOffloadStreams& alloc = *fake;
  ActivationOffloader off(at::Device(at::kCPU), std::move(fake));
  ASSERT_TRUE(off.on_side_stream());

  const torch::Tensor want = torch::arange(12, torch::kFloat32).reshape({3, 4});
  // x is produced by a kernel still queued on the compute stream when it is offloaded.
  torch::Tensor x = torch::zeros({3, 4});
  streams.compute.push_back({[x, want]() mutable { x.copy_(want); }});
  OffloadedTensor t = off.offload(x);

  // Later, a kernel queued on the compute stream still writes a block the host has already freed,
  // and the allocator hands that block to the prefetch.
  torch::Tensor freed = torch::empty({3, 4});
  streams.compute.push_back({[freed]() mutable { freed.fill_(-1.0f); }});
  alloc.next_device_block = freed;
  off.prefetch(t);
  const torch::Tensor back = off.restore(t);

  ASSERT_TRUE(streams.drain()) << "the streams wait on each other";
  EXPECT_EQ(back.data_ptr(), freed.data_ptr());
  EXPECT_TRUE(torch::equal(back, want))
      << "the prefetch's copy landed before the compute stream's last write to its buffer:\n"
      << back;
}

TEST(ActivationOffload, TheCopyOutWaitsForTheKernelThatProducesTheInput) {
  TwoStreams streams;
  ActivationOffloader off(at::Device(at::kCPU), std::make_unique<FakeOffloadStreams>(streams));
  const torch::Tensor want = torch::full({2, 2}, 5.0f);
  torch::Tensor x = torch::zeros({2, 2});
  streams.compute.push_back({[x, want]() mutable { x.copy_(want); }});
  OffloadedTensor t = off.offload(x);
  // The compute stream overwrites x's memory after the offload (the caller dropped x).
  streams.compute.push_back({[x]() mutable { x.fill_(3.0f); }});
  const torch::Tensor back = off.restore(t);
  ASSERT_TRUE(streams.drain());
  EXPECT_TRUE(torch::equal(back, want)) << back;
}

// ---- GPU: runs where a CUDA device exists, skips saying so elsewhere. ----

TEST(ActivationOffload, OnTheGpuThePrefetchWaitsForItsBuffersLastUse) {
  if (visible_cuda_devices().empty())
    GTEST_SKIP() << "no CUDA device visible to this LibTorch (no GPU or driver here)";
  const at::Device d(at::kCUDA, 0);
  const auto on_d = torch::TensorOptions().device(d);
  ActivationOffloader off(d);
  // x stays alive to the end: its block must not be the one the prefetch is handed.
  const torch::Tensor x = torch::randn({64, 2048}, on_d);
  OffloadedTensor t = off.offload(x);
  const torch::Tensor want = x.cpu();
  torch::cuda::synchronize();  // the copy out is done: only the prefetch is left to race

  // A block of the prefetch's size, written by the compute stream only after ~100 ms of queued
  // matrix products, then freed by the host at once: the caching allocator hands it out again
  // on the same stream.
  torch::Tensor freed = torch::empty({64, 2048}, on_d);
  const void* block = freed.data_ptr();
  torch::Tensor a = torch::randn({4096, 4096}, on_d) / 64.0;
  torch::Tensor y = a;
  for (int i = 0; i < 40; ++i) y = y.matmul(a);
  freed.copy_(y.narrow(0, 0, 64).narrow(1, 0, 2048));
  freed = torch::Tensor();
  y = torch::Tensor();

  off.prefetch(t);
  const torch::Tensor back = off.restore(t);
  EXPECT_EQ(back.data_ptr(), block) << "the allocator did not reuse the freed block: the race "
                                       "this test sets up did not happen";
  EXPECT_TRUE(torch::equal(back.cpu(), want))
      << "the prefetch's copy landed before the compute stream's last write to its buffer";
}

}  // namespace
}  // namespace fabkit::trainer
