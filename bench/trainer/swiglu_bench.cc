// The Llama MLP three ways, forward + backward, on CPU: time and the bytes a forward leaves held
// for the backward (the autograd graph's saved tensors plus the output). Not a ctest.
//   op-by-op:       main before issue #20's SwiGLU: one GEMM over cat(gate, up) (a weight copy),
//                   chunk, silu, product, down_proj; autograd saves silu(gate) and the product.
//   fused apart:    swiglu_mlp with gate and up in separate allocations (the copy stays; only the
//                   recompute of silu and the product differs).
//   fused adjacent: swiglu_mlp with gate and up back to back in one buffer, as a sharded unit
//                   holds them (the GEMM reads a view; no copy).
// Each is timed alone (MLP) and inside a whole decoder layer (norms and attention the same for
// all). The contenders alternate within each round; a ratio is the median over rounds of
// op-by-op's median time / the contender's.
//
//   swiglu_bench [--hidden 2048 --inter 5632 --heads 32 --kv-heads 4 --batch 1 --seq 512]
//                [--dtype float32|bfloat16] [--rounds 5] [--iters 3] [--threads 1]
#include <malloc.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include "bench/bench_timing.h"
#include "trainer/model/llama.h"
#include "trainer/model/swiglu_mlp.h"

namespace {

using fabkit::bench::median;
using fabkit::bench::ms;
using namespace fabkit::trainer;

// Bytes the C heap holds (every arena, plus mmapped chunks): ATen's CPU allocator allocates there.
int64_t heap_bytes_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
}

torch::Tensor op_by_op_mlp(const torch::Tensor& x, const torch::Tensor& gate_w,
                           const torch::Tensor& up_w, const torch::Tensor& down_w) {
  auto gate_up = at::linear(x, torch::cat({gate_w, up_w}, 0)).chunk(2, -1);
  return at::linear(torch::silu(gate_up[0]) * gate_up[1], down_w);
}

struct Contender {
  std::string name;
  std::function<torch::Tensor(const torch::Tensor&)> mlp;  // post-norm activations -> MLP output
};

struct Figures {
  std::vector<double> mlp_ms, layer_ms;
  int64_t mlp_held = 0, layer_held = 0;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fused SwiGLU MLP vs op by op, forward + backward, CPU"};
  int64_t hidden = 2048, inter = 5632, heads = 32, kv_heads = 4, batch = 1, seq = 512;
  int rounds = 5, iters = 3, threads = 1;
  std::string dtype_name = "float32";
  app.add_option("--hidden", hidden)->check(CLI::PositiveNumber);
  app.add_option("--inter", inter)->check(CLI::PositiveNumber);
  app.add_option("--heads", heads)->check(CLI::PositiveNumber);
  app.add_option("--kv-heads", kv_heads)->check(CLI::PositiveNumber);
  app.add_option("--batch", batch)->check(CLI::PositiveNumber);
  app.add_option("--seq", seq)->check(CLI::PositiveNumber);
  app.add_option("--dtype", dtype_name)->check(CLI::IsMember({"float32", "bfloat16"}));
  app.add_option("--rounds", rounds)->check(CLI::PositiveNumber);
  app.add_option("--iters", iters, "timed runs per contender per round (median)")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "ATen intra-op threads")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(threads);
  const auto dtype = dtype_name == "float32" ? torch::kFloat32 : torch::kBFloat16;

  fabkit::Json j = {{"hidden_size", hidden},           {"intermediate_size", inter},
                    {"num_hidden_layers", 1},          {"num_attention_heads", heads},
                    {"num_key_value_heads", kv_heads}, {"vocab_size", 256},
                    {"max_position_embeddings", seq}};
  LlamaModel model(parse_llama_config(j, "swiglu_bench"), dtype, 1);
  DecoderLayer layer = model->layers()[0];
  const RopeCache rope = model->rope(seq);
  const auto& gate = layer->mlp->gate_proj->weight;
  const auto& up = layer->mlp->up_proj->weight;
  const auto& down = layer->mlp->down_proj->weight;
  // The same values twice: back to back in one buffer, and in two allocations of their own.
  torch::Tensor flat, gate_adj, up_adj, gate_apart, up_apart;
  {
    torch::NoGradGuard no_grad;
    flat = torch::cat({gate.reshape(-1), up.reshape(-1)});
    gate_adj = flat.narrow(0, 0, gate.numel()).view(gate.sizes()).detach().requires_grad_(true);
    up_adj =
        flat.narrow(0, gate.numel(), up.numel()).view(up.sizes()).detach().requires_grad_(true);
    gate_apart = gate.clone().detach().requires_grad_(true);
    up_apart = up.clone().detach().requires_grad_(true);
  }
  if (!adjacent_rows_view(gate_adj, up_adj).defined() ||
      adjacent_rows_view(gate_apart, up_apart).defined()) {
    std::fprintf(stderr, "swiglu_bench: the adjacent/apart weights are not laid out as intended\n");
    return 3;
  }
  std::vector<Contender> contenders = {
      {"op-by-op",
       [&](const torch::Tensor& x) { return op_by_op_mlp(x, gate_apart, up_apart, down); }},
      {"fused apart",
       [&](const torch::Tensor& x) { return swiglu_mlp(x, gate_apart, up_apart, down); }},
      {"fused adjacent",
       [&](const torch::Tensor& x) { return swiglu_mlp(x, gate_adj, up_adj, down); }},
  };
  std::vector<torch::Tensor> leaves = {gate_adj, up_adj, gate_apart, up_apart};
  for (auto& p : layer->parameters()) leaves.push_back(p);

  torch::manual_seed(3);
  const auto hidden_in = (torch::randn({batch, seq, hidden}) * 0.5).to(dtype).requires_grad_(true);
  const auto dy = torch::randn({batch, seq, hidden}).to(dtype);
  auto clear_grads = [&] {
    for (auto& p : leaves) p.mutable_grad() = at::Tensor();
    hidden_in.mutable_grad() = at::Tensor();
  };
  // One forward + backward; `held` gets the bytes the forward left allocated.
  auto run_mlp = [&](const Contender& c, int64_t* held) {
    const int64_t before = heap_bytes_in_use();
    auto out = c.mlp(hidden_in);
    if (held) *held = heap_bytes_in_use() - before;
    out.backward(dy);
    clear_grads();
  };
  auto run_layer = [&](const Contender& c, int64_t* held) {
    const int64_t before = heap_bytes_in_use();
    auto h = hidden_in +
             layer->self_attn->forward(layer->input_layernorm(hidden_in), rope, torch::Tensor());
    auto out = h + c.mlp(layer->post_attention_layernorm(h));
    if (held) *held = heap_bytes_in_use() - before;
    out.backward(dy);
    clear_grads();
  };

  std::vector<Figures> figures(contenders.size());
  for (size_t i = 0; i < contenders.size(); ++i) {  // warm-up and the memory figure
    run_mlp(contenders[i], &figures[i].mlp_held);
    run_layer(contenders[i], &figures[i].layer_held);
  }
  std::vector<std::vector<double>> mlp_ratio(contenders.size()), layer_ratio(contenders.size());
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> mlp_med(contenders.size()), layer_med(contenders.size());
    for (size_t k = 0; k < contenders.size(); ++k) {
      const size_t i = (k + static_cast<size_t>(r)) % contenders.size();  // rotate who goes first
      std::vector<double> m, l;
      for (int it = 0; it < iters; ++it) m.push_back(ms([&] { run_mlp(contenders[i], nullptr); }));
      for (int it = 0; it < iters; ++it)
        l.push_back(ms([&] { run_layer(contenders[i], nullptr); }));
      mlp_med[i] = median(m);
      layer_med[i] = median(l);
      figures[i].mlp_ms.push_back(mlp_med[i]);
      figures[i].layer_ms.push_back(layer_med[i]);
    }
    for (size_t i = 0; i < contenders.size(); ++i) {
      mlp_ratio[i].push_back(mlp_med[0] / mlp_med[i]);
      layer_ratio[i].push_back(layer_med[0] / layer_med[i]);
    }
  }

  std::printf(
      "swiglu_bench: %s, hidden %lld, intermediate %lld, heads %lld/%lld, tokens %lld x %lld, "
      "%d threads, %d rounds x %d iters\n",
      dtype_name.c_str(), static_cast<long long>(hidden), static_cast<long long>(inter),
      static_cast<long long>(heads), static_cast<long long>(kv_heads),
      static_cast<long long>(batch), static_cast<long long>(seq), threads, rounds, iters);
  std::printf(
      "| contender | MLP fwd+bwd ms | speed-up | layer fwd+bwd ms | speed-up | MLP held MiB | "
      "layer held MiB |\n|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < contenders.size(); ++i) {
    const auto& f = figures[i];
    std::printf("| %s | %.1f | %.3fx | %.1f | %.3fx | %.1f | %.1f |\n", contenders[i].name.c_str(),
                median(f.mlp_ms), median(mlp_ratio[i]), median(f.layer_ms), median(layer_ratio[i]),
                static_cast<double>(f.mlp_held) / (1 << 20),
                static_cast<double>(f.layer_held) / (1 << 20));
  }
  return 0;
}
