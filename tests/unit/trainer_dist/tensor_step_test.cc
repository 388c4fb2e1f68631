// The GPU path's step code (tensor shards, the fused/tensor optimizers, the tensor clip and
// loss-scale checks) run here on CPU tensors against the host loops that the CPU runs use, and
// against torch / HF-style references. On a GPU machine the NCCL tests at the end run too.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/record_function.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <numeric>
#include <set>
#include <string_view>

#include "common/errors.h"
#include "tests/unit/trainer_dist/gloo_rank_threads.h"
#include "trainer/app/device_setup.h"
#include "trainer/model/lm_loss.h"
#include "trainer/optim/loss_scale.h"
#include "trainer/optim/optimizer.h"
#include "trainer/optim/tensor_optimizers.h"
#include "trainer/parallel/activation_offload.h"
#include "trainer/parallel/llama_plan.h"

namespace fabkit::trainer {
namespace {

torch::Tensor host_view(std::vector<float>& v) {
  return torch::from_blob(v.data(), {static_cast<int64_t>(v.size())});
}

TEST(TensorAdamW, FusedKernelMatchesTorchOptimAndTheHostLoop) {
  torch::manual_seed(3);
  torch::Tensor w = torch::randn({4, 9});
  torch::Tensor ref = w.clone().requires_grad_(true);
  torch::optim::AdamW torch_opt(
      {ref}, torch::optim::AdamWOptions(1e-2).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1));
  // One unit padded to 2 ranks' worth (37 -> 38 at world 1 is not padded; use world 1, 36 values).
  std::vector<FlatShard> host{make_flat_shard("u", {{"w", {4, 9}, 0, 0}}, 0, 1)};
  std::copy_n(w.data_ptr<float>(), 36, host[0].param.data());
  std::vector<FlatShard> layout = host;
  torch::Tensor p = w.reshape(-1).clone(), g = torch::zeros({36});
  auto host_opt = make_adamw(host, {0.9, 0.95, 1e-8, 0.1});
  auto tensor_opt = make_tensor_adamw(layout, {p}, {g}, {0.9, 0.95, 1e-8, 0.1});
  for (int step = 0; step < 6; ++step) {
    torch::Tensor grad = torch::randn({4, 9});
    ref.mutable_grad() = grad.clone();
    torch_opt.step();
    std::copy_n(grad.data_ptr<float>(), 36, host[0].grad.data());
    host_opt->step(host, 1e-2);
    g.copy_(grad.reshape(-1));
    tensor_opt->step(layout, 1e-2);
  }
  EXPECT_LT((p.view({4, 9}) - ref.detach()).abs().max().item<float>(), 2e-6f);
  EXPECT_LT((p - host_view(host[0].param)).abs().max().item<float>(), 2e-6f);
  EXPECT_GT((p.view({4, 9}) - w).abs().max().item<float>(), 1e-3f);  // it moved
  EXPECT_EQ(tensor_opt->steps(), 6);
  // Checkpoint arrays: the same names and values as the host optimizer's.
  auto hs = host_opt->state(0), ts = tensor_opt->state(0);
  ASSERT_EQ(hs.size(), ts.size());
  for (size_t i = 0; i < hs.size(); ++i) {
    EXPECT_EQ(hs[i].name, ts[i].name);
    ASSERT_EQ(hs[i].values.size(), ts[i].values.size());
    EXPECT_LT((host_view(hs[i].values) - host_view(ts[i].values)).abs().max().item<float>(), 1e-6f)
        << hs[i].name;
  }
  // load_state round trip, and a wrong size is refused by name.
  auto moved = make_tensor_adamw(layout, {p.clone()}, {g.clone()}, {0.9, 0.95, 1e-8, 0.1});
  moved->load_state(0, ts);
  EXPECT_EQ(moved->state(0)[1].values, ts[1].values);
  std::vector<NamedArray> bad{{"exp_avg", std::vector<float>(5)}};
  try {
    moved->load_state(0, bad);
    FAIL() << "a 5-value exp_avg was accepted for a 36-value shard";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("exp_avg"), std::string::npos) << e.what();
  }
}

// Adafactor over `world` Gloo ranks, host loop and tensor version side by side on the same
// gradients; returns each version's parameters concatenated over ranks.
std::pair<std::vector<float>, std::vector<float>> adafactor_both(
    int world, const torch::Tensor& flat, const std::vector<torch::Tensor>& grads) {
  std::vector<std::vector<float>> host_out(world), tensor_out(world);
  run_ranks(world, [&](Comm& c) {
    const std::vector<ParamSlot> slots{{"w", {7, 5}, 0, 0}, {"b", {6}, 0, 0}, {"m", {3, 2}, 0, 0}};
    std::vector<FlatShard> host{make_flat_shard("u", slots, c.rank(), world)};
    std::vector<FlatShard> layout = host;
    FlatShard& s = host[0];
    for (int64_t i = 0; i < s.valid_numel(); ++i) s.param[i] = flat[s.begin() + i].item<float>();
    torch::Tensor p = host_view(s.param).clone(), g = torch::zeros({s.shard_numel});
    AdafactorOptions ao;
    ao.weight_decay = 0.01;
    auto sum = [&](float* d, size_t n) { c.allreduce_sum(d, n); };
    auto host_opt = make_adafactor(host, ao, sum);
    auto tensor_opt = make_tensor_adafactor(layout, {p}, {g}, ao, sum);
    for (const auto& grad : grads) {
      for (int64_t i = 0; i < s.valid_numel(); ++i) s.grad[i] = grad[s.begin() + i].item<float>();
      g.copy_(host_view(s.grad));
      host_opt->step(host, 0.05);
      tensor_opt->step(layout, 0.05);
    }
    host_out[c.rank()].assign(s.param.begin(), s.param.begin() + s.valid_numel());
    tensor_out[c.rank()].assign(p.data_ptr<float>(), p.data_ptr<float>() + s.valid_numel());
    // The padding tail stays exactly zero.
    if (s.shard_numel > s.valid_numel()) {
      EXPECT_EQ(
          p.narrow(0, s.valid_numel(), s.shard_numel - s.valid_numel()).abs().max().item<float>(),
          0.0f);
    }
    // Same checkpoint layout as the host version.
    auto hs = host_opt->state(0), ts = tensor_opt->state(0);
    for (size_t i = 0; i < hs.size(); ++i) {
      EXPECT_EQ(hs[i].name, ts[i].name);
      EXPECT_EQ(hs[i].values.size(), ts[i].values.size()) << hs[i].name;
    }
  });
  std::vector<float> h, t;
  for (int r = 0; r < world; ++r) {
    h.insert(h.end(), host_out[r].begin(), host_out[r].end());
    t.insert(t.end(), tensor_out[r].begin(), tensor_out[r].end());
  }
  return {h, t};
}

// 47 elements: w (7x5) at 0, b (6) at 35, m (3x2) at 41. Over 3 ranks (16 each) rank 1's slice
// [16, 32) starts inside row 3 of w (col 1), holds whole rows 4-5 and ends inside row 6: the
// three pieces of tensor_adafactor.cc's walk. Over 2 ranks the cut is at 24 (row 4, col 4).
TEST(TensorAdafactor, ShardedOverTwoAndThreeRanksMatchesTheHostLoop) {
  torch::manual_seed(5);
  torch::Tensor flat = torch::randn({47});
  std::vector<torch::Tensor> grads;
  for (int s = 0; s < 4; ++s) grads.push_back(torch::randn({47}));
  for (int world : {1, 2, 3}) {
    auto [h, t] = adafactor_both(world, flat, grads);
    ASSERT_EQ(h.size(), 47u);
    ASSERT_EQ(t.size(), 47u);
    torch::Tensor ht = torch::from_blob(h.data(), {47}).clone(),
                  tt = torch::from_blob(t.data(), {47}).clone();
    // Sums taken in another order (block sums vs element loop): rounding only.
    EXPECT_LT((ht - tt).abs().max().item<float>(), 1e-5f) << "world " << world;
    EXPECT_GT((tt - flat).abs().max().item<float>(), 1e-2f) << "world " << world;  // it moved
  }
}

// The ATen operations one call issues on this thread that compute (views, allocations and the
// dispatcher's wrappers excluded): on a GPU each is at least one kernel launch.
class ComputeOps {
 public:
  ComputeOps() {
    handle_ = at::addThreadLocalCallback(
        at::RecordFunctionCallback(
            [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
              static const std::set<std::string_view> kNotCompute = {
                  "aten::narrow",     "aten::slice",       "aten::view",
                  "aten::unsqueeze",  "aten::as_strided",  "aten::select",
                  "aten::expand",     "aten::reshape",     "aten::alias",
                  "aten::empty",      "aten::empty_like",  "aten::empty_strided",
                  "aten::detach",     "aten::resize_",     "aten::from_blob",
                  "aten::lift_fresh", "aten::item",        "aten::_local_scalar_dense",
                  "aten::to",         "aten::_to_copy",    "aten::zeros",
                  "aten::zeros_like", "aten::result_type", "aten::contiguous",
                  "aten::stack",      "aten::cat",         "aten::_reshape_alias"};
              if (depth_++ == 0 && !kNotCompute.count(fn.name())) ++count_;
              return nullptr;
            },
            [](const at::RecordFunction&, at::ObserverContext*) { --depth_; })
            .scopes({at::RecordScope::FUNCTION}));
  }
  ~ComputeOps() { at::removeCallback(handle_); }
  static int64_t count() { return count_; }

 private:
  at::CallbackHandle handle_;
  static thread_local int64_t count_, depth_;
};
thread_local int64_t ComputeOps::count_ = 0;
thread_local int64_t ComputeOps::depth_ = 0;

// Top-level compute operations of one tensor Adafactor step over one unit of `params` factored
// [8, 6] matrices and as many [5] vectors (one rank).
int64_t adafactor_ops_per_step(int params) {
  std::vector<ParamSlot> slots;
  for (int i = 0; i < params; ++i) {
    slots.push_back({"w" + std::to_string(i), {8, 6}, 0, 0});
    slots.push_back({"b" + std::to_string(i), {5}, 0, 0});
  }
  std::vector<FlatShard> layout{make_flat_shard("u", slots, 0, 1)};
  torch::Tensor p = torch::randn({layout[0].shard_numel}),
                g = torch::randn({layout[0].shard_numel});
  auto opt = make_tensor_adafactor(layout, {p}, {g}, AdafactorOptions{}, [](float*, size_t) {});
  opt->step(layout, 0.01);  // warm: the first step makes its cached index tensors
  ComputeOps ops;
  const int64_t before = ComputeOps::count();
  opt->step(layout, 0.01);
  return ComputeOps::count() - before;
}

// Adafactor's element-wise work runs as foreach operations over the whole parameter list: what
// each further parameter adds is its row/column reductions and factor product, not a dozen
// separate element-wise kernels (the per-tensor loop added ~30 operations per parameter pair).
TEST(TensorAdafactor, ElementwiseWorkIsForeachOverTheParameterList) {
  const int64_t small = adafactor_ops_per_step(8), large = adafactor_ops_per_step(16);
  const double per_pair = static_cast<double>(large - small) / 8.0;
  std::cout << "tensor Adafactor step: " << small << " compute operations for 8 matrix+vector pairs, "
            << large << " for 16 (" << per_pair << " per further pair)\n";
  EXPECT_LE(per_pair, 8.0) << small << " operations for 8 matrix+vector pairs, " << large
                           << " for 16";
}

// Several units of a Llama-like shape, stepped whole (step) and unit by unit (step_unit, the fused
// step), over 2 ranks: equal to the host loop within fp32 rounding.
TEST(TensorAdafactor, ForeachStepAndUnitStepMatchTheHostLoopOverUnits) {
  torch::manual_seed(3);
  const std::vector<std::vector<ParamSlot>> units = {
      {{"embed", {13, 8}, 0, 0}, {"norm", {8}, 0, 0}},
      {{"q", {8, 8}, 0, 0},
       {"k", {4, 8}, 0, 0},
       {"ln", {8}, 0, 0},
       {"up", {12, 8}, 0, 0},
       {"down", {8, 12}, 0, 0}},
      {{"q", {8, 8}, 0, 0}, {"ln", {8}, 0, 0}, {"down", {8, 12}, 0, 0}}};
  std::vector<torch::Tensor> init, grads;
  for (const auto& slots : units) {
    int64_t n = 0;
    for (const auto& sl : slots)
      n += std::accumulate(sl.shape.begin(), sl.shape.end(), int64_t{1}, std::multiplies<>());
    init.push_back(torch::randn({n}));
    for (int k = 0; k < 3; ++k) grads.push_back(torch::randn({n}));
  }
  for (bool per_unit : {false, true}) {
    std::vector<std::string> failures(2);
    run_ranks(2, [&](Comm& c) {
      std::vector<FlatShard> host;
      for (size_t u = 0; u < units.size(); ++u)
        host.push_back(make_flat_shard("u" + std::to_string(u), units[u], c.rank(), 2));
      std::vector<FlatShard> layout = host;
      std::vector<torch::Tensor> ps, gs;
      for (size_t u = 0; u < host.size(); ++u) {
        FlatShard& s = host[u];
        for (int64_t i = 0; i < s.valid_numel(); ++i)
          s.param[i] = init[u][s.begin() + i].item<float>();
        ps.push_back(host_view(s.param).clone());
        gs.push_back(torch::zeros({s.shard_numel}));
      }
      AdafactorOptions ao;
      ao.weight_decay = 0.02;
      auto sum = [&](float* d, size_t n) { c.allreduce_sum(d, n); };
      auto host_opt = make_adafactor(host, ao, sum);
      auto tensor_opt = make_tensor_adafactor(layout, ps, gs, ao, sum);
      for (int k = 0; k < 3; ++k) {
        for (size_t u = 0; u < host.size(); ++u) {
          FlatShard& s = host[u];
          std::fill(s.grad.begin(), s.grad.end(), 0.0f);
          for (int64_t i = 0; i < s.valid_numel(); ++i)
            s.grad[i] = grads[3 * u + k][s.begin() + i].item<float>();
          gs[u].copy_(host_view(s.grad));
        }
        host_opt->step(host, 0.05);
        if (per_unit) {
          tensor_opt->begin_step();
          for (size_t u = 0; u < host.size(); ++u)
            tensor_opt->step_unit(layout, u, gs[u].data_ptr<float>(), 0.05);
        } else {
          tensor_opt->step(layout, 0.05);
        }
      }
      // The checkpointed statistics too: every rank keeps every parameter's row/column
      // statistics, also of parameters outside its slice (a reshard reads them from one rank).
      for (size_t u = 0; u < host.size(); ++u) {
        const auto hs = host_opt->state(u), ts = tensor_opt->state(u);
        for (size_t a = 0; a < hs.size(); ++a) {
          ASSERT_EQ(hs[a].values.size(), ts[a].values.size());
          for (size_t k = 0; k < hs[a].values.size(); ++k) {
            if (std::abs(hs[a].values[k] - ts[a].values[k]) >
                1e-6f * (1.0f + std::abs(hs[a].values[k]))) {
              failures[c.rank()] += "unit " + std::to_string(u) + " " + hs[a].name + "[" +
                                    std::to_string(k) + "] " + std::to_string(ts[a].values[k]) +
                                    " vs " + std::to_string(hs[a].values[k]) + "; ";
              break;
            }
          }
        }
      }
      for (size_t u = 0; u < host.size(); ++u) {
        const float diff = (host_view(host[u].param) - ps[u]).abs().max().item<float>();
        if (diff > 2e-6f)
          failures[c.rank()] +=
              "unit " + std::to_string(u) + " differs by " + std::to_string(diff) + "; ";
      }
    });
    EXPECT_EQ(failures[0], "") << (per_unit ? "step_unit" : "step");
    EXPECT_EQ(failures[1], "") << (per_unit ? "step_unit" : "step");
  }
}

// --offload-activations: what comes back is a copy taken at offload time (writing the original
// afterwards changes nothing), in order on the caller on CPU; and a sharded model (2 ranks,
// recompute) computes bit-identical loss and gradients with and without offload.
TEST(ActivationOffload, RoundTripIsACopyAndTheGradientsAreUnchanged) {
  ActivationOffloader off(at::Device(at::kCPU));
  EXPECT_FALSE(off.on_side_stream());
  torch::Tensor x = torch::randn({3, 5}), want = x.clone();
  OffloadedTensor t = off.offload(x);
  x.fill_(7.0f);
  off.prefetch(t);
  torch::Tensor back = off.restore(t);
  EXPECT_TRUE(torch::equal(back, want));
  EXPECT_NE(back.data_ptr(), x.data_ptr());
  EXPECT_FALSE(t.defined());  // restore hands the tensor over and drops the host copy

  torch::manual_seed(4);
  torch::Tensor ids = torch::randint(0, 50, {4, 9}, torch::kInt64);
  run_ranks(2, [&](Comm& c) {
    std::vector<torch::Tensor> grads[2];
    double loss[2] = {0, 0};
    for (int with_offload = 0; with_offload < 2; ++with_offload) {
      LlamaModel m(tiny_config(true), torch::kFloat32, 7);
      auto mb = std::make_shared<MicroBatch>();
      LlamaPlan plan = plan_llama(m, mb);
      ShardedModel sm(c, plan.units, plan.stages, /*recompute=*/true, torch::kFloat32,
                      at::Device(at::kCPU));
      if (with_offload) sm.enable_activation_offload();
      mb->input_ids = ids.narrow(0, 2 * c.rank(), 2);
      mb->labels = mb->input_ids.clone();
      mb->attention_mask = torch::ones_like(mb->input_ids);
      mb->loss_normalizer = 32.0;
      loss[with_offload] = sm.forward_backward().item<double>();
      for (const auto& g : sm.grad_tensors()) grads[with_offload].push_back(g.clone());
    }
    EXPECT_EQ(loss[0], loss[1]);
    for (size_t u = 0; u < grads[0].size(); ++u)
      EXPECT_TRUE(torch::equal(grads[0][u], grads[1][u])) << "unit " << u;
  });
}

TEST(TensorStep, FiniteCheckScaleAndClipMatchTheHostLoops) {
  torch::manual_seed(9);
  std::vector<FlatShard> host{make_flat_shard("a", {{"x", {10}, 0, 0}}, 0, 1),
                              make_flat_shard("b", {{"y", {4, 3}, 0, 0}}, 0, 1)};
  std::vector<torch::Tensor> grads;
  for (auto& s : host) {
    torch::Tensor g = torch::randn({s.shard_numel}) * 3;
    std::copy_n(g.data_ptr<float>(), s.shard_numel, s.grad.data());
    grads.push_back(g);
  }
  EXPECT_TRUE(tensor_grads_finite(grads));
  EXPECT_EQ(tensor_grads_finite(grads), grads_finite(host));
  int calls = 0;
  auto identity = [&](double*, size_t) { ++calls; };
  const double host_norm = clip_grad_norm(host, 1.5, identity);
  const double tensor_norm = tensor_clip_grad_norm(grads, 1.5, identity);
  EXPECT_EQ(calls, 2);  // each sums across shards once
  // Each shard's norm is an fp32 result (a double-typed norm would copy the shard to double, twice
  // its memory): relative error ~1e-7 against the host loop's double sums.
  EXPECT_NEAR(tensor_norm, host_norm, 1e-6 * host_norm);
  EXPECT_GT(host_norm, 1.5);
  for (size_t u = 0; u < host.size(); ++u) {
    EXPECT_LT((grads[u] - host_view(host[u].grad)).abs().max().item<float>(), 1e-6f);
  }
  tensor_scale_grads(grads, 0.5f);
  scale_grads(host, 0.5f);
  EXPECT_LT((grads[1] - host_view(host[1].grad)).abs().max().item<float>(), 1e-7f);
  grads[1][2] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(tensor_grads_finite(grads));
  grads[1][2] = std::nanf("");
  EXPECT_FALSE(tensor_grads_finite(grads));
}


// Tensor shards (their own storage, as on a GPU) against host shards: the same gradients after a
// forward/backward at 2 ranks, and the host mirror synced both ways.
TEST(ShardedModel, TensorShardsEqualHostShardsAndSyncTheHostMirror) {
  torch::manual_seed(11);
  torch::Tensor ids = torch::randint(0, 50, {4, 9}, torch::kInt64);
  run_ranks(2, [&](Comm& c) {
    std::vector<torch::Tensor> grads[2];
    for (int mode = 0; mode < 2; ++mode) {
      LlamaModel m(tiny_config(false), torch::kFloat32, 7);
      auto mb = std::make_shared<MicroBatch>();
      LlamaPlan plan = plan_llama(m, mb);
      std::optional<at::Device> dev;
      if (mode == 1) dev = at::Device(at::kCPU);
      ShardedModel sm(c, plan.units, plan.stages, false, torch::kFloat32, dev);
      EXPECT_EQ(sm.tensor_shards(), mode == 1);
      mb->input_ids = ids.narrow(0, 2 * c.rank(), 2);
      mb->labels = mb->input_ids.clone();
      mb->attention_mask = torch::ones_like(mb->input_ids);
      mb->loss_normalizer = 36.0;
      sm.forward_backward();
      for (const auto& g : sm.grad_tensors()) grads[mode].push_back(g.clone());
      if (mode == 1) {
        // Separate storage: the host grads were never written.
        for (const auto& s : sm.shards()) {
          for (float x : s.grad) ASSERT_EQ(x, 0.0f);
        }
        sm.param_tensors()[0].fill_(2.5f);
        sm.sync_params_to_host();
        EXPECT_EQ(sm.shards()[0].param.front(), 2.5f);
        sm.shards()[1].param.front() = -4.0f;
        sm.sync_params_from_host();
        EXPECT_EQ(sm.param_tensors()[1][0].item<float>(), -4.0f);
      }
    }
    ASSERT_EQ(grads[0].size(), grads[1].size());
    for (size_t u = 0; u < grads[0].size(); ++u) {
      EXPECT_TRUE(torch::allclose(grads[0][u], grads[1][u], 1e-5, 1e-7)) << "unit " << u;
      EXPECT_GT(grads[1][u].abs().max().item<float>(), 0.0f) << "unit " << u;
    }
  });
}

// ---- GPU: these run where CUDA devices exist and skip, saying so, elsewhere. ----

std::string no_gpu_reason() {
  const auto gpus = visible_cuda_devices();
  return gpus.empty() ? "no CUDA device visible to this LibTorch (no GPU or driver here)" : "";
}

TEST(NcclComm, OneRankCollectivesOnDeviceAndHostMemory) {
  if (auto why = no_gpu_reason(); !why.empty()) GTEST_SKIP() << why;
  CommOptions o;
  o.cuda_device = 0;
  o.master_port = pick_free_port();
  auto comm = make_comm(o);
  EXPECT_EQ(comm->backend(), "nccl");
  const auto cuda = torch::TensorOptions(torch::kFloat32).device(torch::kCUDA, 0);
  torch::Tensor in = torch::arange(6, cuda), out = torch::zeros({6}, cuda);
  comm->allgather_async(in.data_ptr<float>(), 6, out.data_ptr<float>())->wait();
  EXPECT_TRUE(torch::equal(out.cpu(), in.cpu()));
  torch::Tensor acc = torch::ones({6}, cuda);
  comm->reduce_scatter_add_async(in.data_ptr<float>(), 6, acc.data_ptr<float>())->wait();
  EXPECT_TRUE(torch::equal(acc.cpu(), (in + 1).cpu()));
  double host[2] = {1.5, -2.0};  // host memory: staged through the device
  comm->allreduce_sum(host, 2);
  EXPECT_EQ(host[0], 1.5);
  std::vector<float> host_acc(3, 1.0f), host_in{1, 2, 3};
  comm->reduce_scatter_add_async(host_in.data(), 3, host_acc.data())->wait();
  EXPECT_EQ(host_acc, (std::vector<float>{2, 3, 4}));
  unsigned char bytes[3] = {7, 8, 9}, gathered[3] = {0, 0, 0};
  comm->allgather_bytes(bytes, 3, gathered);
  EXPECT_EQ(gathered[2], 9);
  comm->barrier();
}

// NCCL on the GPU against the local comm on CPU at world size 1: the same sharded gradients.
// On a GPU the copies run on the offloader's side stream: queued behind long kernels on the
// compute stream, the copy out still sees the finished input (the event orders it), the input's
// memory is not reused while it is copied, and the restored tensor equals it once the compute
// stream waited for the copy back.
TEST(ActivationOffload, OnTheGpuTheSideStreamIsOrderedByEvents) {
  if (auto why = no_gpu_reason(); !why.empty()) GTEST_SKIP() << why;
  const at::Device d(at::kCUDA, 0);
  ActivationOffloader off(d);
  EXPECT_TRUE(off.on_side_stream());
  torch::Tensor a = torch::randn({2048, 2048}, torch::TensorOptions().device(d));
  torch::Tensor x =
      a.matmul(a).matmul(a).narrow(0, 0, 64).contiguous();  // still running when offloaded
  OffloadedTensor t = off.offload(x);
  torch::Tensor want = x.cpu();
  // Freed while the side stream may still read it: the allocator must not hand it out yet.
  x = torch::Tensor();
  torch::Tensor reuse = torch::zeros({64, 2048}, torch::TensorOptions().device(d));
  torch::Tensor back = off.restore(t);
  EXPECT_TRUE(back.is_cuda());
  EXPECT_TRUE(torch::equal(back.cpu(), want));
}

TEST(NcclComm, ShardedGradsOnTheGpuEqualTheCpuRun) {
  if (auto why = no_gpu_reason(); !why.empty()) GTEST_SKIP() << why;
  torch::manual_seed(11);
  torch::Tensor ids = torch::randint(0, 50, {2, 9}, torch::kInt64);
  std::vector<torch::Tensor> grads[2];
  for (int gpu = 0; gpu < 2; ++gpu) {
    CommOptions o;
    o.cuda_device = gpu ? 0 : -1;
    o.master_port = pick_free_port();
    auto comm = make_comm(o);
    const at::Device dev = gpu ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
    LlamaModel m(tiny_config(false), torch::kFloat32, 7);
    m->set_device(dev);
    auto mb = std::make_shared<MicroBatch>();
    LlamaPlan plan = plan_llama(m, mb);
    ShardedModel sm(*comm, plan.units, plan.stages, true, torch::kFloat32, dev);
    mb->input_ids = ids.to(dev);
    mb->labels = mb->input_ids.clone();
    mb->attention_mask = torch::ones_like(mb->input_ids);
    mb->loss_normalizer = 18.0;
    sm.forward_backward();
    for (const auto& g : sm.grad_tensors()) grads[gpu].push_back(g.cpu());
  }
  for (size_t u = 0; u < grads[0].size(); ++u) {
    EXPECT_TRUE(torch::allclose(grads[0][u], grads[1][u], 1e-3, 1e-5)) << "unit " << u;
  }
}

}  // namespace
}  // namespace fabkit::trainer
