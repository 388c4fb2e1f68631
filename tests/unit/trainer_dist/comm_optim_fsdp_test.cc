// Gloo ranks as threads on 127.0.0.1: the comm interface, the optimizers against references,
// and FSDP-style sharded gradients against the plain 1-process autograd gradients.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstring>
#include <functional>
#include <map>
#include <thread>

#include "tests/unit/trainer_dist/forwarding_comm.h"
#include "tests/unit/trainer_dist/gloo_rank_threads.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/distributed/comm.h"
#include "trainer/distributed/local_spawn.h"
#include "trainer/model/lm_loss.h"
#include "trainer/optim/loss_scale.h"
#include "trainer/optim/optimizer.h"
#include "trainer/parallel/llama_plan.h"
#include "trainer/parallel/pipeline_plan.h"

namespace fabkit::trainer {
namespace {

TEST(GlooComm, CollectivesAndPointToPoint) {
  run_ranks(3, [](Comm& c) {
    const float r = static_cast<float>(c.rank());
    std::vector<float> a{r, 2 * r};
    c.allreduce_sum(a.data(), a.size());
    EXPECT_EQ(a, (std::vector<float>{3, 6}));
    double d = 0.25;
    c.allreduce_sum(&d, 1);
    EXPECT_EQ(d, 0.75);
    std::vector<float> in{r, r + 10}, out(6);
    c.allgather(in.data(), 2, out.data());
    EXPECT_EQ(out, (std::vector<float>{0, 10, 1, 11, 2, 12}));
    std::vector<float> b{r + 1};
    c.broadcast(b.data(), 1, 2);
    EXPECT_EQ(b[0], 3.0f);
    float x = 7.0f + r;
    if (c.rank() == 0) c.send(&x, 1, 1, 5);
    if (c.rank() == 1) {
      c.recv(&x, 1, 0, 5);
      EXPECT_EQ(x, 7.0f);
    }
    c.barrier();
  });
}

// Sends posted without waiting (the pipeline's isend) complete in whatever order the receiver
// takes them: here the second first, each buffer 1 MiB so no transport can hold it for the
// receiver, and each arrives whole under its own tag.
TEST(GlooComm, PostedSendsCompleteInTheReceiversOrder) {
  run_ranks(2, [](Comm& c) {
    constexpr size_t kN = 1 << 18;
    if (c.rank() == 0) {
      std::vector<float> first(kN, 1.5f), second(kN, -2.0f);
      CommRequestPtr a = c.send_async(first.data(), kN, 1, 11);
      CommRequestPtr b = c.send_async(second.data(), kN, 1, 12);
      b->wait();
      a->wait();
    } else {
      std::vector<float> x(kN), y(kN);
      c.recv(y.data(), kN, 0, 12);
      c.recv(x.data(), kN, 0, 11);
      EXPECT_EQ(x, std::vector<float>(kN, 1.5f));
      EXPECT_EQ(y, std::vector<float>(kN, -2.0f));
    }
    c.barrier();
  });
}

// Checkpoint steps cross ranks as int64 bytes: a float carries integers exactly only up to 2^24
// (16777217 became 16777216 when steps were broadcast as floats).
TEST(GlooComm, CheckpointStepsPast2To24CrossRanksExactly) {
  const std::vector<int64_t> want{(int64_t{1} << 24) + 1, (int64_t{1} << 40) + 3, 7};
  run_ranks(2, [&](Comm& c) {
    std::vector<int64_t> steps;
    if (c.rank() == 0) steps = want;
    broadcast_steps(c, steps, 0);
    EXPECT_EQ(steps, want) << "rank " << c.rank();
    // Raw bytes from every rank land in rank order, untouched.
    const unsigned char mine[3] = {static_cast<unsigned char>(0xF0 + c.rank()), 0x00, 0xFF};
    unsigned char all[6] = {};
    c.allgather_bytes(mine, 3, all);
    EXPECT_EQ(std::vector<unsigned char>(all, all + 6),
              (std::vector<unsigned char>{0xF0, 0x00, 0xFF, 0xF1, 0x00, 0xFF}));
  });
}

// Reduce-scatter (alltoall + local sum) ADDS rank r's sum into out, with uneven contributions so a
// chunk sent to the wrong rank or summed twice shows.
TEST(GlooComm, ReduceScatterAddsEachRanksChunkSum) {
  run_ranks(3, [](Comm& c) {
    const int r = c.rank();
    std::vector<float> in(3 * 2);
    for (int dst = 0; dst < 3; ++dst) {
      in[dst * 2] = static_cast<float>(100 * r + dst);  // from r to dst
      in[dst * 2 + 1] = static_cast<float>(r + 1);
    }
    std::vector<float> out{0.5f, -1.0f};
    c.reduce_scatter_add(in.data(), 2, out.data());
    // sum over senders s of (100 s + r), plus the 0.5 already there; sum of (s + 1) minus 1.
    EXPECT_EQ(out[0], 0.5f + 300.0f + 3.0f * r);
    EXPECT_EQ(out[1], -1.0f + 6.0f);
  });
}

// Two collectives in flight at once, waited for in the opposite order: both land, unchanged by
// each other (the sharded model prefetches one unit while reducing another).
TEST(GlooComm, AsyncCollectivesOverlapAndLandInAnyWaitOrder) {
  run_ranks(2, [](Comm& c) {
    const float r = static_cast<float>(c.rank());
    const size_t n = 1 << 16;
    std::vector<float> shard(n, r + 1), gathered(2 * n, -1.0f);
    std::vector<float> grads(2 * n, 2.0f * (r + 1)), acc(n, 1.0f);
    CommRequestPtr g = c.allgather_async(shard.data(), n, gathered.data());
    CommRequestPtr s = c.reduce_scatter_add_async(grads.data(), n, acc.data());
    s->wait();
    g->wait();
    EXPECT_EQ(gathered[0], 1.0f);
    EXPECT_EQ(gathered[2 * n - 1], 2.0f);
    EXPECT_EQ(acc[0], 1.0f + 2.0f + 4.0f);
    EXPECT_EQ(acc[n - 1], 7.0f);
  });
}

TEST(LocalComm, ReduceScatterAddsTheInput) {
  auto c = make_local_comm();
  std::vector<float> in{1.5f, 2.0f}, out{1.0f, 1.0f};
  c->reduce_scatter_add(in.data(), 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{2.5f, 3.0f}));
}

TEST(GlooComm, RendezvousTimesOutWithANamedError) {
  CommOptions o;
  o.rank = 1;  // a client whose server (rank 0) never starts
  o.world_size = 2;
  o.master_port = pick_free_port();
  o.rendezvous_timeout_ms = 1500;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    make_gloo_comm(o);
    FAIL();
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("rendezvous failed"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(15));
}

TEST(AdamW, MatchesTorchOptimAdamW) {
  torch::manual_seed(3);
  torch::Tensor w = torch::randn({4, 9});
  torch::Tensor ref = w.clone().requires_grad_(true);
  torch::optim::AdamW torch_opt({ref}, torch::optim::AdamWOptions(1e-2).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1));
  std::vector<FlatShard> shards{make_flat_shard("u", {{"w", {4, 9}, 0, 0}}, 0, 1)};
  std::copy_n(w.data_ptr<float>(), 36, shards[0].param.data());
  auto opt = make_adamw(shards, {0.9, 0.95, 1e-8, 0.1});
  for (int step = 0; step < 6; ++step) {
    torch::Tensor g = torch::randn({4, 9});
    ref.mutable_grad() = g.clone();
    torch_opt.step();
    std::copy_n(g.data_ptr<float>(), 36, shards[0].grad.data());
    opt->step(shards, 1e-2);
  }
  // Same fp32 operations in the same order up to fusion: a few ulp of the ~1 values.
  torch::Tensor got = torch::from_blob(shards[0].param.data(), {4, 9}).clone();
  EXPECT_LT((got - ref.detach()).abs().max().item<float>(), 2e-6f);
  EXPECT_GT((got - w).abs().max().item<float>(), 1e-3f);  // it moved
}

// Clipping folded into the optimizer's read of each gradient (step_scaled) is the separate
// scaling pass followed by the step, to the bit: AdamW's fused read and the base class's pass.
TEST(ShardOptimizer, ScaledStepEqualsScalingThenStepping) {
  for (const char* which : {"adamw", "adafactor"}) {
    torch::manual_seed(5);
    torch::Tensor w = torch::randn({5, 11});
    auto make = [&](std::vector<FlatShard>& shards) {
      shards = {make_flat_shard("u", {{"w", {5, 11}, 0, 0}}, 0, 1)};
      std::copy_n(w.data_ptr<float>(), 55, shards[0].param.data());
      return std::string(which) == "adamw" ? make_adamw(shards, {0.9, 0.95, 1e-8, 0.1})
                                           : make_adafactor(shards, {}, [](float*, size_t) {});
    };
    std::vector<FlatShard> fused, separate;
    auto a = make(fused);
    auto b = make(separate);
    for (int step = 0; step < 4; ++step) {
      torch::Tensor g = torch::randn({5, 11}) * 3;
      const float clip = step % 2 ? 0.37f : 1.0f;
      std::copy_n(g.data_ptr<float>(), 55, fused[0].grad.data());
      std::copy_n(g.data_ptr<float>(), 55, separate[0].grad.data());
      a->step_scaled(fused, 1e-2, clip);
      scale_grads(separate, clip);
      b->step(separate, 1e-2);
    }
    EXPECT_EQ(0, std::memcmp(fused[0].param.data(), separate[0].param.data(), 55 * sizeof(float)))
        << which;
  }
}

// Adafactor written the direct way on whole tensors (HF's algorithm), as the reference.
void reference_adafactor(torch::Tensor p, torch::Tensor g, torch::Tensor& row, torch::Tensor& col,
                         torch::Tensor& v, int64_t step, double lr, double wd) {
  const double beta2t = 1.0 - std::pow(static_cast<double>(step), -0.8);
  torch::Tensor g2 = g * g + 1e-30;
  torch::Tensor u;
  if (p.dim() == 2) {
    row.mul_(beta2t).add_(g2.mean(-1), 1 - beta2t);
    col.mul_(beta2t).add_(g2.mean(-2), 1 - beta2t);
    torch::Tensor r = (row / row.mean()).rsqrt().unsqueeze(-1);
    torch::Tensor c = col.rsqrt().unsqueeze(0);
    u = g * r * c;
  } else {
    v.mul_(beta2t).add_(g2, 1 - beta2t);
    u = g * v.rsqrt();
  }
  u.div_(std::max(1.0, u.pow(2).mean().sqrt().item<double>() / 1.0));
  p.add_(p, -wd * lr);
  p.add_(u, -lr);
}

TEST(Adafactor, ShardedOverTwoRanksMatchesTheWholeTensorReference) {
  torch::manual_seed(5);
  torch::Tensor w = torch::randn({7, 5}), b = torch::randn({6});
  std::vector<torch::Tensor> grads;
  for (int s = 0; s < 4; ++s) grads.push_back(torch::randn({41}));
  // Reference.
  torch::Tensor rw = w.clone(), rb = b.clone(), row = torch::zeros({7}), col = torch::zeros({5}), v = torch::zeros({6}), none;
  for (int s = 0; s < 4; ++s) {
    reference_adafactor(rw, grads[s].narrow(0, 0, 35).view({7, 5}), row, col, none, s + 1, 0.05, 0.01);
    reference_adafactor(rb, grads[s].narrow(0, 35, 6), none, none, v, s + 1, 0.05, 0.01);
  }
  // Two ranks: 41 elements -> 21 + 20 (+1 padding); rank 0's slice ends inside row 4 of w.
  std::vector<std::vector<float>> got(2);
  run_ranks(2, [&](Comm& c) {
    std::vector<FlatShard> shards{make_flat_shard("u", {{"w", {7, 5}, 0, 0}, {"b", {6}, 0, 0}}, c.rank(), 2)};
    torch::Tensor flat = torch::cat({w.reshape(-1), b});
    FlatShard& s = shards[0];
    for (int64_t i = 0; i < s.valid_numel(); ++i) s.param[i] = flat[s.begin() + i].item<float>();
    AdafactorOptions ao;
    ao.weight_decay = 0.01;
    auto opt = make_adafactor(shards, ao, [&](float* d, size_t n) { c.allreduce_sum(d, n); });
    for (int step = 0; step < 4; ++step) {
      for (int64_t i = 0; i < s.valid_numel(); ++i) s.grad[i] = grads[step][s.begin() + i].item<float>();
      opt->step(shards, 0.05);
    }
    got[c.rank()].assign(s.param.begin(), s.param.begin() + s.valid_numel());
  });
  std::vector<float> all = got[0];
  all.insert(all.end(), got[1].begin(), got[1].end());
  ASSERT_EQ(all.size(), 41u);
  torch::Tensor expect = torch::cat({rw.reshape(-1), rb});
  torch::Tensor actual = torch::from_blob(all.data(), {41}).clone();
  EXPECT_LT((actual - expect).abs().max().item<float>(), 1e-5f);
  EXPECT_GT((actual - torch::cat({w.reshape(-1), b})).abs().max().item<float>(), 1e-2f);
}


// The global batch, 4 sequences of 9 tokens, some labels ignored.
std::pair<torch::Tensor, torch::Tensor> global_batch() {
  torch::manual_seed(11);
  torch::Tensor ids = torch::randint(0, 50, {4, 9}, torch::kInt64);
  torch::Tensor labels = ids.clone();
  labels.index_put_({1, torch::indexing::Slice(0, 4)}, kIgnoreLabel);
  labels.index_put_({2, 8}, kIgnoreLabel);
  return {ids, labels};
}

// stage_plan: the units and stages of one pipeline stage that holds the whole model
// (plan_llama_stage with first and last), instead of plan_llama.
void check_sharded_grads_equal_full(bool tied, bool recompute, bool stage_plan = false) {
  auto [ids, labels] = global_batch();
  // 1 process, whole batch, mean over counted tokens.
  LlamaModel ref(tiny_config(tied), torch::kFloat32, 7);
  LmLoss l = causal_lm_loss(ref->forward(ids), labels);
  l.mean().backward();
  const double ref_loss = l.mean().item<double>();
  std::map<std::string, torch::Tensor> ref_grads;
  for (auto& [n, p] : ref->hf_named_parameters()) ref_grads[n] = p.grad().clone();

  std::vector<double> losses(2);
  std::vector<std::string> failures(2);
  run_ranks(2, [&](Comm& c) {
    LlamaModel m(tiny_config(tied), torch::kFloat32, 7);
    auto mb = std::make_shared<MicroBatch>();
    const int layers = static_cast<int>(m->config().num_hidden_layers);
    LlamaPlan plan =
        stage_plan ? plan_llama_stage(m, mb, 0, layers, true, true) : plan_llama(m, mb);
    ShardedModel sm(c, plan.units, plan.stages, recompute);
    mb->input_ids = ids.narrow(0, 2 * c.rank(), 2);
    mb->labels = labels.narrow(0, 2 * c.rank(), 2);
    mb->attention_mask = torch::ones_like(mb->input_ids);
    mb->loss_normalizer = static_cast<double>(l.tokens);
    double loss = sm.forward_backward().item<double>();
    c.allreduce_sum(&loss, 1);
    losses[c.rank()] = loss;
    // Gather every unit's grad shard into full grads and compare by name.
    for (size_t u = 0; u < sm.shards().size(); ++u) {
      FlatShard& s = sm.shards()[u];
      std::vector<float> full(s.shard_numel * 2);
      c.allgather(s.grad.data(), s.shard_numel, full.data());
      for (const auto& slot : s.params) {
        torch::Tensor g = torch::from_blob(full.data() + slot.offset, slot.shape).clone();
        const float diff = (g - ref_grads.at(slot.name)).abs().max().item<float>();
        const float scale = ref_grads.at(slot.name).abs().max().item<float>();
        if (diff > 1e-6f + 1e-4f * scale) {
          failures[c.rank()] += slot.name + " differs by " + std::to_string(diff) + " (max |g| " + std::to_string(scale) + "); ";
        }
      }
    }
  });
  EXPECT_NEAR(losses[0], ref_loss, 1e-5 * ref_loss);
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
}

// fp32 tolerance: the sharded run sums two half-batch gradients (Gloo's allreduce) where the
// reference sums over the whole batch inside one matmul; summation order changes the last bits
// only: |diff| <= 1e-6 + 1e-4 * max|g| per tensor.
TEST(ShardedModel, GradsEqualOneProcessUntiedKeepGraph) { check_sharded_grads_equal_full(false, false); }
TEST(ShardedModel, GradsEqualOneProcessTiedRecompute) { check_sharded_grads_equal_full(true, true); }
// A tied model on one pipeline stage with recompute: the head runs on the embedding matrix after
// the embed stage released it, unless the head's stage names the unit that holds the matrix.
TEST(ShardedModel, TiedSingleStagePlanWithRecomputeEqualsOneProcess) {
  check_sharded_grads_equal_full(true, true, true);
}
TEST(ShardedModel, UntiedSingleStagePlanEqualsOneProcess) {
  check_sharded_grads_equal_full(false, true, true);
}

// Forwards every call to a real comm and records the bytes each allgather puts on the wire (the
// buffer the Comm is handed: world x count fp32 words), whatever the model claims it sent.
class ByteCountingComm : public ForwardingComm {
 public:
  using ForwardingComm::ForwardingComm;
  CommRequestPtr allgather_async(const float* in, size_t n, float* out) override {
    allgather_bytes_.push_back(static_cast<int64_t>(n * sizeof(float)) * world_size());
    return ForwardingComm::allgather_async(in, n, out);
  }
  std::vector<int64_t> allgather_bytes_;
};

// Mixed precision as FSDP does it: each rank casts its fp32 shard to bf16 before the allgather.
// (1) The gathered unit travels in bf16: the model's record and the bytes the Comm was handed both
// say 2 bytes per parameter (plus at most one pad half-word per rank), half of fp32.
// (2) The result equals the previous way (the full fp32 unit cast to bf16 after it is whole: one
// process, whose "gather" is that cast) within bf16 tolerance: loss and every gradient.
TEST(ShardedModel, Bf16CastBeforeAllgatherHalvesTheBytesAndEqualsCastAfter) {
  auto [ids, labels] = global_batch();
  const double tokens =
      static_cast<double>(causal_lm_loss(torch::zeros({4, 9, 50}), labels).tokens);
  // The previous way: world 1 gathers nothing; the whole fp32 unit is cast after.
  std::map<std::string, torch::Tensor> ref_grads;
  double ref_loss = 0.0;
  {
    auto local = make_local_comm();
    LlamaModel m(tiny_config(false), torch::kFloat32, 7);
    m->set_compute_dtype(torch::kBFloat16);
    auto mb = std::make_shared<MicroBatch>();
    LlamaPlan plan = plan_llama(m, mb);
    ShardedModel sm(*local, plan.units, plan.stages, true, torch::kBFloat16);
    mb->input_ids = ids;
    mb->labels = labels;
    mb->attention_mask = torch::ones_like(ids);
    mb->loss_normalizer = tokens;
    ref_loss = sm.forward_backward().item<double>();
    for (const auto& s : sm.shards()) {
      for (const auto& slot : s.params) {
        ref_grads[slot.name] =
            torch::from_blob(const_cast<float*>(s.grad.data()) + slot.offset, slot.shape).clone();
      }
    }
  }
  std::vector<double> losses(2);
  std::vector<std::string> failures(2);
  run_ranks(2, [&](Comm& gloo) {
    ByteCountingComm c(gloo);
    LlamaModel m(tiny_config(false), torch::kFloat32, 7);
    m->set_compute_dtype(torch::kBFloat16);
    auto mb = std::make_shared<MicroBatch>();
    LlamaPlan plan = plan_llama(m, mb);
    ShardedModel sm(c, plan.units, plan.stages, true, torch::kBFloat16);
    std::vector<CollectiveRecord> gathers;
    sm.set_collective_observer([&](const CollectiveRecord& r) {
      if (r.op == "allgather") gathers.push_back(r);
    });
    mb->input_ids = ids.narrow(0, 2 * c.rank(), 2);
    mb->labels = labels.narrow(0, 2 * c.rank(), 2);
    mb->attention_mask = torch::ones_like(mb->input_ids);
    mb->loss_normalizer = tokens;
    double loss = sm.forward_backward().item<double>();
    c.allreduce_sum(&loss, 1);
    losses[c.rank()] = loss;
    // Every gather of the step: recorded as bf16, and the Comm moved exactly the recorded bytes.
    ASSERT_FALSE(gathers.empty());
    ASSERT_EQ(gathers.size(), c.allgather_bytes_.size());
    int64_t fp32_bytes = 0, bf16_bytes = 0;
    for (size_t i = 0; i < gathers.size(); ++i) {
      EXPECT_EQ(gathers[i].dtype, torch::kBFloat16) << "allgather " << i;
      EXPECT_EQ(gathers[i].bytes, c.allgather_bytes_[i]) << "allgather " << i;
      bf16_bytes += c.allgather_bytes_[i];
    }
    // What fp32 gathers of the same units would move: 4 bytes x world x shard_numel per gather.
    std::map<std::string, int64_t> unit_fp32;
    for (const auto& s : sm.shards()) unit_fp32[s.unit] = 4 * 2 * s.shard_numel;
    for (const auto& s : sm.shards()) {
      const int64_t half = 2 * 2 * ((s.shard_numel + 1) / 2);  // bf16, slice padded to whole words
      EXPECT_LE(half, unit_fp32[s.unit] / 2 + 4) << s.unit;
    }
    // Recompute gathers each unit twice (forward, backward): 2 gathers per unit.
    for (const auto& s : sm.shards()) fp32_bytes += 2 * unit_fp32[s.unit];
    EXPECT_EQ(gathers.size(), 2 * sm.shards().size());
    EXPECT_LE(bf16_bytes, fp32_bytes / 2 + 4 * static_cast<int64_t>(gathers.size()));
    for (size_t u = 0; u < sm.shards().size(); ++u) {
      FlatShard& s = sm.shards()[u];
      std::vector<float> full(s.shard_numel * 2);
      c.allgather(s.grad.data(), s.shard_numel, full.data());
      for (const auto& slot : s.params) {
        torch::Tensor g = torch::from_blob(full.data() + slot.offset, slot.shape).clone();
        const torch::Tensor& r = ref_grads.at(slot.name);
        // bf16: 8 bits of mantissa; two half-batch sums against one whole-batch sum, in bf16
        // matmuls: within 2^-6 of the tensor's largest gradient.
        const float diff = (g - r).abs().max().item<float>();
        const float scale = r.abs().max().item<float>();
        if (diff > 1e-5f + scale / 64) {
          failures[c.rank()] += slot.name + " differs by " + std::to_string(diff) + " (max |g| " +
                                std::to_string(scale) + "); ";
        }
      }
    }
  });
  EXPECT_NEAR(losses[0], ref_loss, 1e-2 * ref_loss);
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
}

}  // namespace
}  // namespace fabkit::trainer
