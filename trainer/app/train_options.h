// Everything `fabtrain train` takes, bound once to CLI11 (train_options.cc).
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace fabkit::trainer {

struct TrainOptions {
  // Fabric
  std::string profile;
  bool skip_validate = false;
  int nproc = 1;
  int threads = 0;       // ATen intra-op threads per rank; 0: thread_plan.h decides
  int blas_threads = 0;  // OpenBLAS threads per rank; 0: thread_plan.h decides
  int dp = 0;  // 0: the world size
  int pp = 1;
  // Pipeline (--pp > 1, app/pipeline_engine.h): schedule, micro-batches per replica per step
  // (0: 4 x pp), layers per stage ("" : balanced by parameter count).
  std::string schedule = "1f1b";
  int micro_batches = 0;
  std::string stage_layers;
  // Interleaved 1F1B: model chunks per rank (0: 2 with interleaved-1f1b, else 1).
  int virtual_stages = 0;
  // Print the pipeline schedule's timeline (and write it as HTML) and exit before anything runs.
  bool dry_run = false;
  std::string timeline_html;
  // Where to compute: auto (a GPU when one is visible), cpu, cuda.
  std::string device = "auto";
  // How the optimizer step runs: host loops over the shards (CPU default) or ATen ops on the
  // shards' tensors (GPU; "tensor" on CPU runs the GPU path's code for tests). auto: by device.
  std::string step_impl = "auto";
  // Stop unless NCCL used this network (IB, RoCE, Socket or a plugin name): GPU runs only.
  std::string require_transport;
  int rendezvous_timeout_ms = 120000;
  int collective_timeout_ms = 120000;
  // Model and data
  std::string model_dir;
  std::string data;
  std::string valid_data;
  double valid_split = 0.0;
  std::string output_dir = "fabtrain-out";
  std::string format = "auto";
  std::string text_column = "text";
  std::string chat_template = "chatml";
  int64_t max_length = 512;
  bool no_packing = false;
  bool skip_bad_lines = false;
  uint64_t seed = 0;
  // Loop
  int64_t max_steps = 0;  // 0: num_epochs decides
  int64_t num_epochs = 1;
  int64_t micro_batch_size = 1;  // per rank
  int64_t grad_accum = 1;
  bool recompute = false;
  bool offload_activations = false;  // with recompute: stage inputs wait in host memory
  bool fused_step = false;           // step each unit in the backward; no gradient shards kept
  // Compute precision (the seed recipes' name); master weights and optimizer state stay float32.
  // float16 scales the loss dynamically.
  std::string torch_dtype = "float32";
  // The dtype gradients travel in to be reduce-scattered: float32 (default) or bfloat16 (half the
  // bytes; FSDP's reduce_dtype). Stored as --torch-dtype names; fp32/bf16 are accepted too.
  std::string reduce_dtype = "float32";
  double initial_loss_scale = 65536.0;
  int64_t loss_scale_window = 2000;
  int64_t eval_every = 0;
  int64_t log_every = 1;
  int64_t trace_steps = 0;  // Chrome traces of this many steps (after 2 warm-up steps)
  // Optimizer
  std::string optimizer = "adamw";
  double lr = 1e-4;
  int64_t warmup_steps = 0;
  double min_lr_ratio = 0.0;
  double weight_decay = 0.0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double max_grad_norm = 1.0;
  // Checkpoints
  int64_t save_every = 0;
  int save_total_limit = 0;
  bool save_on_each_node = false;  // OUTPUT is on each node's local disk, not shared
  bool resume = true;
  int64_t exit_after_steps = 0;  // stop (as if preempted) after this many steps in this process
  bool no_control = false;       // no control socket (`fabtrain control`)
};

void bind_train_options(CLI::App& cmd, TrainOptions& o);

// The log's words for --reduce-dtype (a --torch-dtype name) over `replicas` ranks that reduce
// each gradient together.
std::string reduce_dtype_text(const std::string& reduce_dtype, int replicas);

// The exit code; argv is re-used by --nproc to start the ranks.
int run_train(const TrainOptions& o, const std::vector<std::string>& argv);

}  // namespace fabkit::trainer
