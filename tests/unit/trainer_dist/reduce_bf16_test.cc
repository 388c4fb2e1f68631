// --reduce-dtype bf16 (issue #20): gradients reduce-scattered in bf16, summed into the fp32 shard.
// On Gloo ranks (threads on 127.0.0.1): the sum equals the fp32 reduce-scatter within bf16's
// rounding, bytes on the wire are half the fp32 call's (counted by the kernel, in a network
// namespace of the test's own), and the sharded model casts each gradient to bf16, records it so
// and tracks the fp32-reduced gradients. The NCCL cases run where CUDA devices exist.
#include <gtest/gtest.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "tests/unit/trainer_dist/forwarding_comm.h"
#include "tests/unit/trainer_dist/gloo_rank_threads.h"
#include "trainer/app/device_setup.h"
#include "trainer/distributed/comm.h"
#include "trainer/distributed/local_spawn.h"
#include "trainer/model/lm_loss.h"
#include "trainer/parallel/llama_plan.h"

namespace fabkit::trainer {
namespace {

// The bf16 bits of each value (round to nearest even, as ATen's cast) and those bits widened back.
std::vector<uint16_t> bf16_bits(const std::vector<float>& v) {
  torch::Tensor b = torch::from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())})
                        .to(torch::kBFloat16)
                        .contiguous();
  const auto* p = static_cast<const uint16_t*>(b.data_ptr());
  return {p, p + v.size()};
}
std::vector<float> widened(const std::vector<uint16_t>& bits) {
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) {
    const uint32_t w = static_cast<uint32_t>(bits[i]) << 16;
    std::memcpy(&out[i], &w, sizeof(float));
  }
  return out;
}

// Rank r's contribution: magnitudes spread over 2^-6 .. 2^6 and a per-rank seed, so a chunk sent
// to the wrong rank, summed twice or rounded coarser than bf16 shows.
std::vector<float> contribution(int rank, int world, size_t count) {
  torch::manual_seed(100 + rank);
  torch::Tensor t =
      torch::randn({static_cast<int64_t>(world * count)}) *
      torch::pow(2.0,
                 torch::randint(-6, 7, {static_cast<int64_t>(world * count)}).to(torch::kFloat));
  return {t.data_ptr<float>(), t.data_ptr<float>() + t.numel()};
}

// Gloo sums the received bf16 chunks in fp32 (comm_gloo.cc), in rank order as the fp32 call does:
// the result is the fp32 reduce-scatter of the rounded inputs, bit for bit. Against the fp32
// reduce-scatter of the unrounded inputs it differs by at most each input's bf16 rounding
// (2^-8 of |x|: 8 significant bits, round to nearest) summed over ranks. The output already holds
// values: the sum is ADDED. Counts not divisible by anything (7, 1001) catch an off-by-one in the
// chunk offsets.
void check_bf16_reduce_scatter(int world, size_t count) {
  run_ranks(world, [&](Comm& c) {
    const std::vector<float> in = contribution(c.rank(), world, count);
    const std::vector<uint16_t> bits = bf16_bits(in);
    const std::vector<float> rounded = widened(bits);
    std::vector<float> start(count);
    for (size_t i = 0; i < count; ++i) start[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;

    std::vector<float> out_bf16 = start, out_rounded = start, out_fp32 = start;
    c.reduce_scatter_add_bf16(bits.data(), count, out_bf16.data());
    c.reduce_scatter_add(rounded.data(), count, out_rounded.data());
    c.reduce_scatter_add(in.data(), count, out_fp32.data());

    // The bound: sum over ranks of 2^-8 |x| for this rank's chunk, from every rank's inputs.
    std::vector<float> abs_chunk(count * static_cast<size_t>(world));
    for (int p = 0; p < world; ++p) {
      for (size_t i = 0; i < count; ++i) abs_chunk[p * count + i] = std::fabs(in[p * count + i]);
    }
    std::vector<float> abs_sum(count, 0.0f);
    c.reduce_scatter_add(abs_chunk.data(), count, abs_sum.data());

    double max_diff = 0.0;
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(out_bf16[i], out_rounded[i]) << "rank " << c.rank() << " element " << i;
      const double diff = std::fabs(static_cast<double>(out_bf16[i]) - out_fp32[i]);
      // plus fp32 rounding of the sums themselves (a few ulps of the largest partial sum)
      EXPECT_LE(diff, abs_sum[i] / 256.0 + 1e-6 * (abs_sum[i] + std::fabs(start[i])))
          << "rank " << c.rank() << " element " << i;
      max_diff = std::max(max_diff, diff);
    }
    EXPECT_GT(max_diff, 0.0) << "rank " << c.rank()
                             << ": no element rounded, so bf16 did not travel";
  });
}

TEST(GlooComm, Bf16ReduceScatterOnTwoRanksEqualsFp32WithinBf16) { check_bf16_reduce_scatter(2, 7); }
TEST(GlooComm, Bf16ReduceScatterOnThreeRanksUnevenCountEqualsFp32WithinBf16) {
  check_bf16_reduce_scatter(3, 1001);
}

TEST(LocalComm, Bf16ReduceScatterAddsTheWidenedInput) {
  auto c = make_local_comm();
  const std::vector<uint16_t> bits =
      bf16_bits({1.5f, -2.0f, 3.0f + 1.0f / 256});  // the last rounds
  std::vector<float> out{1.0f, 1.0f, 0.0f};
  c->reduce_scatter_add_bf16(bits.data(), 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{2.5f, -1.0f, 3.0f}));
}

// ---- bytes on the wire, counted by the kernel ----

// This thread's network namespace (private to it after unshare) with its loopback up.
std::string enter_private_netns() {
  if (::geteuid() != 0) return "a private network namespace needs root";
  if (::unshare(CLONE_NEWNET) != 0)
    return std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return std::string("socket: ") + std::strerror(errno);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
  std::string err;
  if (::ioctl(fd, SIOCGIFFLAGS, &ifr) != 0)
    err = std::string("SIOCGIFFLAGS lo: ") + std::strerror(errno);
  ifr.ifr_flags |= IFF_UP;
  if (err.empty() && ::ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)
    err = std::string("SIOCSIFFLAGS lo up: ") + std::strerror(errno);
  ::close(fd);
  return err;
}

// Bytes sent on lo in the calling thread's network namespace (/proc/net/dev's tx_bytes).
int64_t loopback_tx_bytes() {
  std::ifstream f("/proc/thread-self/net/dev");
  std::string line;
  while (std::getline(f, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name != "lo") continue;
    std::istringstream fields(line.substr(colon + 1));
    int64_t v = 0;
    for (int i = 0; i < 9; ++i)
      fields >> v;  // rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes
    return v;
  }
  return -1;
}

// The fp32 and the bf16 reduce-scatter of the same count, each between barriers, on `world` Gloo
// ranks in a network namespace of their own (no other traffic on its loopback): the bf16 one
// must put half the fp32 one's bytes on the wire. Payload per collective: each rank sends its
// (world - 1) chunks to their ranks, world x (world - 1) x count values in all; TCP/IP headers
// and ACKs add a little on top (lo's MTU is 64 KiB).
constexpr int kWireRuns = 3;

void check_bf16_wire_bytes(int world, size_t count) {
  std::string skip;
  int64_t fp32_bytes = 0, bf16_bytes = 0;
  std::thread netns_thread([&] {
    skip = enter_private_netns();
    if (!skip.empty()) return;
    // Threads started from here (ranks, Gloo's, the store's) share this namespace.
    run_ranks(world, [&](Comm& c) {
      std::vector<float> in(count * static_cast<size_t>(world), 0.5f + c.rank()), out(count, 0.0f);
      const std::vector<uint16_t> bits = bf16_bits(in);
      auto measure = [&](const std::function<void()>& collective) {
        c.barrier();
        const int64_t before = c.rank() == 0 ? loopback_tx_bytes() : 0;
        c.barrier();  // nobody sends the payload before rank 0 has read the counter
        collective();
        c.barrier();
        return c.rank() == 0 ? loopback_tx_bytes() - before : 0;
      };
      // The fewest bytes of three runs each: on a loaded machine an odd run carries a few per
      // cent more (more, smaller TCP segments and their ACKs); the collective's own bytes do not
      // change from run to run.
      int64_t f = INT64_MAX, b = INT64_MAX;
      for (int run = 0; run < kWireRuns; ++run) {
        f = std::min(f, measure([&] { c.reduce_scatter_add(in.data(), count, out.data()); }));
        b = std::min(b,
                     measure([&] { c.reduce_scatter_add_bf16(bits.data(), count, out.data()); }));
      }
      if (c.rank() == 0) {
        fp32_bytes = f;
        bf16_bytes = b;
      }
      EXPECT_EQ(out[0], 2 * kWireRuns * (world * 0.5f + world * (world - 1) / 2.0f))
          << "rank " << c.rank();
    });
  });
  netns_thread.join();
  if (!skip.empty()) GTEST_SKIP() << skip;
  const int64_t values = static_cast<int64_t>(world) * (world - 1) * static_cast<int64_t>(count);
  EXPECT_GE(fp32_bytes, 4 * values);
  EXPECT_LE(fp32_bytes, 4 * values * 21 / 20) << "headers and barriers should add under 5%";
  EXPECT_GE(bf16_bytes, 2 * values);
  EXPECT_LE(bf16_bytes, 2 * values * 21 / 20);
  const double ratio = static_cast<double>(bf16_bytes) / static_cast<double>(fp32_bytes);
  EXPECT_NEAR(ratio, 0.5, 0.03) << "fp32 " << fp32_bytes << " bytes, bf16 " << bf16_bytes;
  std::printf(
      "[ wire     ] %d ranks x %zu values: fp32 reduce-scatter %lld bytes on lo, bf16 %lld (ratio "
      "%.4f)\n",
      world, count, static_cast<long long>(fp32_bytes), static_cast<long long>(bf16_bytes), ratio);
}

TEST(GlooComm, Bf16ReduceScatterPutsHalfTheBytesOnTheWireTwoRanks) {
  check_bf16_wire_bytes(2, 1 << 20);
}
TEST(GlooComm, Bf16ReduceScatterPutsHalfTheBytesOnTheWireThreeRanks) {
  check_bf16_wire_bytes(3, 300001);
}

// ---- the sharded model ----

// Counts what the comm was handed per reduce-scatter call, by dtype.
class ReduceRecordingComm : public ForwardingComm {
 public:
  using ForwardingComm::ForwardingComm;
  CommRequestPtr reduce_scatter_add_async(const float* in, size_t n, float* out) override {
    fp32_bytes_.push_back(static_cast<int64_t>(n * sizeof(float)) * world_size());
    return ForwardingComm::reduce_scatter_add_async(in, n, out);
  }
  CommRequestPtr reduce_scatter_add_bf16_async(const uint16_t* in, size_t n, float* out) override {
    bf16_bytes_.push_back(static_cast<int64_t>(n * sizeof(uint16_t)) * world_size());
    return ForwardingComm::reduce_scatter_add_bf16_async(in, n, out);
  }
  std::vector<int64_t> fp32_bytes_, bf16_bytes_;
};

struct ReduceRun {
  std::vector<CollectiveRecord> reductions;     // what the model's observer saw
  std::vector<int64_t> fp32_bytes, bf16_bytes;  // what the comm was handed
  std::map<std::string, torch::Tensor> grads;   // the reduced gradient, whole, by parameter
  double loss = 0;
};

// One micro-batch of the tiny Llama on 2 Gloo ranks (rank r takes half the batch), gradients
// reduced in `reduce`; compute in `compute`. Returns rank 0's view.
ReduceRun sharded_step(at::ScalarType compute, at::ScalarType reduce) {
  torch::manual_seed(11);
  const torch::Tensor ids = torch::randint(0, 50, {4, 9}, torch::kInt64);
  const double tokens = static_cast<double>(ids.numel() - ids.size(0));  // one shift per row
  ReduceRun run;
  run_ranks(2, [&](Comm& gloo) {
    ReduceRecordingComm c(gloo);
    LlamaModel m(tiny_config(false), torch::kFloat32, 7);
    m->set_compute_dtype(compute);
    auto mb = std::make_shared<MicroBatch>();
    LlamaPlan plan = plan_llama(m, mb);
    ShardedModel sm(c, plan.units, plan.stages, false, compute);
    sm.set_reduce_dtype(reduce);
    std::vector<CollectiveRecord> reductions;
    sm.set_collective_observer([&](const CollectiveRecord& r) {
      if (r.op == "reduce-scatter") reductions.push_back(r);
    });
    mb->input_ids = ids.narrow(0, 2 * c.rank(), 2);
    mb->labels = mb->input_ids;
    mb->attention_mask = torch::ones_like(mb->input_ids);
    mb->loss_normalizer = tokens;
    double loss = sm.forward_backward().item<double>();
    c.allreduce_sum(&loss, 1);
    std::map<std::string, torch::Tensor> grads;
    for (FlatShard& s : sm.shards()) {
      std::vector<float> full(s.shard_numel * 2);
      c.allgather(s.grad.data(), s.shard_numel, full.data());
      for (const auto& slot : s.params)
        grads[slot.name] = torch::from_blob(full.data() + slot.offset, slot.shape).clone();
    }
    if (c.rank() == 0) run = {reductions, c.fp32_bytes_, c.bf16_bytes_, grads, loss};
  });
  return run;
}

// With reduce dtype bf16 every reduce-scatter of the step is recorded as bf16, the comm's bf16
// call got exactly the recorded bytes (the fp32 call none), half of what the fp32-reduced run
// moved for the same units; the reduced gradients equal the fp32-reduced ones within bf16's
// rounding of each rank's gradient (2^-8 of the tensor's largest, with room for two ranks). With
// fp32 compute the reduction is the only bf16 in the step (FSDP's MixedPrecision(param_dtype=None,
// reduce_dtype=bf16)) and the gradients differ from the fp32-reduced ones; with bf16 compute they
// are bf16 already and Gloo's fp32 sum makes them equal.
TEST(ShardedModel, Bf16ReduceRecordsBf16HalfTheBytesAndTracksFp32Reduce) {
  for (at::ScalarType compute : {torch::kFloat32, torch::kBFloat16}) {
    SCOPED_TRACE(c10::toString(compute));
    const ReduceRun f = sharded_step(compute, torch::kFloat32);
    const ReduceRun b = sharded_step(compute, torch::kBFloat16);
    ASSERT_FALSE(f.reductions.empty());
    ASSERT_EQ(b.reductions.size(), f.reductions.size());
    EXPECT_TRUE(b.fp32_bytes.empty()) << "a gradient went through the fp32 reduce-scatter";
    ASSERT_EQ(b.bf16_bytes.size(), b.reductions.size());
    int64_t fp32_total = 0, bf16_total = 0;
    for (size_t i = 0; i < b.reductions.size(); ++i) {
      EXPECT_EQ(f.reductions[i].dtype, torch::kFloat32) << "reduction " << i;
      EXPECT_EQ(f.reductions[i].bytes, f.fp32_bytes[i]) << "reduction " << i;
      EXPECT_EQ(b.reductions[i].dtype, torch::kBFloat16) << "reduction " << i;
      EXPECT_EQ(b.reductions[i].bytes, b.bf16_bytes[i]) << "reduction " << i;
      EXPECT_EQ(2 * b.reductions[i].bytes, f.reductions[i].bytes) << "reduction " << i;
      fp32_total += f.reductions[i].bytes;
      bf16_total += b.reductions[i].bytes;
    }
    EXPECT_EQ(2 * bf16_total, fp32_total);
    std::printf("[ bytes    ] compute %s: reduce-scatter bytes per step fp32 %lld, bf16 %lld\n",
                c10::toString(compute), static_cast<long long>(fp32_total),
                static_cast<long long>(bf16_total));
    EXPECT_NEAR(b.loss, f.loss, 1e-6 * f.loss) << "the forward does not depend on the reduce dtype";
    float max_diff = 0;
    for (const auto& [name, g] : f.grads) {
      const torch::Tensor& gb = b.grads.at(name);
      const float diff = (gb - g).abs().max().item<float>();
      const float scale = g.abs().max().item<float>();
      EXPECT_LE(diff, 1e-7f + scale / 128) << name << " (max |g| " << scale << ")";
      max_diff = std::max(max_diff, diff);
    }
    if (compute == torch::kFloat32) {
      EXPECT_GT(max_diff, 0.0f)
          << "identical to the fp32 reduction, so nothing was rounded to bf16";
    } else {
      // bf16 compute: the gradients are bf16 already, so the cast loses nothing, and Gloo sums in
      // fp32 as the fp32 reduction does: the same bits (NCCL, summing in bf16, would differ).
      EXPECT_EQ(max_diff, 0.0f);
    }
  }
}

TEST(ShardedModel, ReduceDtypeOtherThanFp32OrBf16IsRefused) {
  auto local = make_local_comm();
  LlamaModel m(tiny_config(false), torch::kFloat32, 7);
  auto mb = std::make_shared<MicroBatch>();
  LlamaPlan plan = plan_llama(m, mb);
  ShardedModel sm(*local, plan.units, plan.stages, false);
  EXPECT_EQ(sm.reduce_dtype(), torch::kFloat32) << "the default stays fp32";
  try {
    sm.set_reduce_dtype(torch::kHalf);
    FAIL() << "fp16 reduction accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("--reduce-dtype"), std::string::npos) << e.what();
  }
}

// ---- NCCL: where CUDA devices exist ----

std::string too_few_gpus(size_t need) {
  const auto gpus = visible_cuda_devices();
  if (gpus.size() >= need) return "";
  return "needs " + std::to_string(need) + " CUDA device(s); this LibTorch sees " +
         std::to_string(gpus.size()) +
         (need > 1 ? " (two ranks cannot share one GPU in an NCCL communicator)" : "");
}

// World of one on the GPU: the bf16 _reduce_scatter_base and the add into the fp32 shard, on device
// memory (stream-ordered) and on host memory (staged).
TEST(NcclComm, OneRankBf16ReduceScatterAddsIntoTheFp32Shard) {
  if (auto why = too_few_gpus(1); !why.empty()) GTEST_SKIP() << why;
  CommOptions o;
  o.cuda_device = 0;
  o.master_port = pick_free_port();
  auto comm = make_comm(o);
  ASSERT_EQ(comm->backend(), "nccl");
  const at::Device d(at::kCUDA, 0);
  torch::Tensor in = torch::tensor({1.5f, -2.0f, 3.0f + 1.0f / 256}).to(torch::kBFloat16).to(d);
  torch::Tensor acc = torch::ones({3}, torch::TensorOptions(torch::kFloat32).device(d));
  comm->reduce_scatter_add_bf16_async(static_cast<const uint16_t*>(in.data_ptr()), 3,
                                      acc.data_ptr<float>())
      ->wait();
  EXPECT_TRUE(torch::equal(acc.cpu(), torch::tensor({2.5f, -1.0f, 4.0f})));
  const std::vector<uint16_t> bits = bf16_bits({0.5f, 8.0f});
  std::vector<float> host_acc{1.0f, 1.0f};
  comm->reduce_scatter_add_bf16(bits.data(), 2, host_acc.data());
  EXPECT_EQ(host_acc, (std::vector<float>{1.5f, 9.0f}));
}

// Two GPUs, a rank each (threads): the sum NCCL forms in bf16 equals the fp32 reduce-scatter of
// the rounded inputs within one more bf16 rounding per hop.
TEST(NcclComm, TwoRanksBf16ReduceScatterEqualsFp32WithinBf16) {
  if (auto why = too_few_gpus(2); !why.empty()) GTEST_SKIP() << why;
  const uint16_t port = pick_free_port();
  const size_t count = 1001;
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        CommOptions o;
        o.rank = r;
        o.world_size = 2;
        o.master_port = port;
        o.cuda_device = r;
        o.collective_timeout_ms = 20000;
        auto c = make_nccl_comm(o);
        const at::Device d(at::kCUDA, r);
        const std::vector<float> in = contribution(r, 2, count);
        const std::vector<float> rounded = widened(bf16_bits(in));
        torch::Tensor bits =
            torch::from_blob(const_cast<float*>(in.data()), {static_cast<int64_t>(in.size())})
                .to(torch::kBFloat16)
                .to(d);
        torch::Tensor acc = torch::zeros({static_cast<int64_t>(count)},
                                         torch::TensorOptions(torch::kFloat32).device(d));
        c->reduce_scatter_add_bf16(static_cast<const uint16_t*>(bits.data_ptr()), count,
                                   acc.data_ptr<float>());
        std::vector<float> ref(count, 0.0f);
        c->reduce_scatter_add(rounded.data(), count, ref.data());
        torch::Tensor got = acc.cpu();
        torch::Tensor want = torch::from_blob(ref.data(), {static_cast<int64_t>(count)});
        // One more rounding of the 2-term sum to bf16: 2^-8 of it at most.
        const float diff = (got - want).abs().max().item<float>();
        const float bound = want.abs().max().item<float>() / 256 + 1e-6f;
        if (diff > bound)
          errors[r] = "differs by " + std::to_string(diff) + " > " + std::to_string(bound);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

}  // namespace
}  // namespace fabkit::trainer
