// `fabtrain train`: the whole run as a story, one numbered section per stage.
#include <torch/torch.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <optional>
#include <iostream>
#include <filesystem>

#include "common/errors.h"
#include "trainer/app/device_setup.h"
#include "trainer/app/fabric_setup.h"
#include "trainer/app/nccl_transport.h"
#include "trainer/app/pipeline_train.h"
#include "trainer/app/run_monitor.h"
#include "trainer/app/train_log.h"
#include "trainer/app/train_options.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/data/batch.h"
#include "trainer/data/sampler.h"
#include "trainer/distributed/comm.h"
#include "trainer/distributed/launch_env.h"
#include "trainer/distributed/local_spawn.h"
#include "trainer/distributed/thread_plan.h"
#include "trainer/model/ignore_label.h"
#include "trainer/model/pretrained.h"
#include "trainer/optim/loss_scale.h"
#include "trainer/optim/optimizer.h"
#include "trainer/optim/tensor_optimizers.h"
#include "trainer/optim/schedule.h"
#include "trainer/parallel/llama_plan.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// --fused-step steps each unit before the step's global facts exist; --offload-activations moves
// recompute's checkpoints. Refused combinations name the flag that fixes them.
void check_memory_options(const TrainOptions& o) {
  if (o.offload_activations && !o.recompute) {
    throw UsageError("--offload-activations moves the per-layer checkpoints of --recompute to host memory: add "
                     "--recompute");
  }
  if (!o.fused_step) return;
  if (o.max_grad_norm > 0) {
    throw UsageError("--fused-step updates each unit during the backward, before the global gradient norm exists: "
                     "clipping at --max-grad-norm " + std::to_string(o.max_grad_norm) +
                     " is impossible; pass --max-grad-norm 0");
  }
  if (o.grad_accum != 1) {
    throw UsageError("--fused-step applies each micro-batch's gradient at once: --grad-accum " +
                     std::to_string(o.grad_accum) + " needs kept gradient shards; use --grad-accum 1");
  }
  if (o.torch_dtype == "float16") {
    throw UsageError("--fused-step cannot skip a step whose float16 gradients overflowed (the check needs every "
                     "unit's gradient first): use --torch-dtype bfloat16 or drop --fused-step");
  }
}

// Target tokens the causal loss counts: labels[:, 1:] != -100 (the logits at t predict t+1).
int64_t target_tokens(const at::Tensor& labels) {
  return labels.slice(1, 1).ne(kIgnoreLabel).sum().item<int64_t>();
}

DataOptions data_options(const TrainOptions& o, int64_t vocab_size) {
  DataOptions d;
  d.format = parse_data_format(o.format);
  d.text_column = o.text_column;
  d.chat_template = o.chat_template;
  d.max_length = o.max_length;
  d.packing = !o.no_packing;
  d.valid_split = o.valid_split;
  d.valid_file = o.valid_data;
  d.seed = o.seed;
  d.skip_bad_lines = o.skip_bad_lines;
  d.vocab_size = vocab_size;
  return d;
}

// The micro-batch's tensors on the compute device (a no-op on CPU).
void load_micro_batch(MicroBatch& mb, const Batch& b, const at::Device& device, double loss_normalizer) {
  mb.input_ids = b.input_ids.to(device);
  mb.labels = b.labels.to(device);
  mb.attention_mask = b.attention_mask.to(device);
  mb.loss_normalizer = loss_normalizer;
}

// Mean loss over the validation set: every rank runs its shard; sums cross ranks once.
double validation_loss(ShardedModel& model, MicroBatch& mb, const std::vector<Example>& valid,
                       const TrainOptions& o, Comm& comm) {
  double acc[2] = {0.0, 0.0};  // loss sum, tokens
  for (const auto& idx : epoch_batches(valid.size(), o.seed, 0, comm.rank(), comm.world_size(),
                                       static_cast<size_t>(o.micro_batch_size))) {
    Batch b = make_batch(valid, idx);
    load_micro_batch(mb, b, model.device(), 1.0);
    acc[0] += model.forward_loss();
    acc[1] += static_cast<double>(target_tokens(b.labels));
  }
  comm.allreduce_sum(acc, 2);
  return acc[1] > 0 ? acc[0] / acc[1] : 0.0;
}

// glibc hands blocks above its mmap threshold back to the kernel on free, so each step's
// activation and gradient buffers were mapped, page-faulted and zero-filled anew (page faults and
// page clearing were ~3% of a 1-rank step under perf). A fixed high threshold keeps them in the
// heap for the next step; the footprint stays at the step's peak, which every step reaches anyway.
void keep_freed_buffers_for_reuse() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

// The two thread pools (ATen's and OpenBLAS's): see thread_plan.h for why they are planned.
void apply_thread_plan(const Environment& env, int local_ranks, const TrainOptions& o, TrainLog& log) {
  auto flag = [](int v) { return v > 0 ? std::optional<int>(v) : std::nullopt; };
  const ThreadPlan plan = plan_threads(gather_thread_facts(env, local_ranks, flag(o.threads), flag(o.blas_threads)));
  apply_blas_threads(plan);
  torch::set_num_threads(plan.intra_op);
  log.info("threads per rank: ATen intra-op " + std::to_string(plan.intra_op) + ", BLAS " +
           (plan.blas ? std::to_string(*plan.blas) : std::string("untouched")) + " (" + plan.reason + ")");
}

int run_train_with(const TrainOptions& o, const std::vector<std::string>& argv,
                   NcclLogPlan& nccl_log);

}  // namespace

// A collective that failed ends the run (the group is dead): before it does, this rank's NCCL log
// is explained with `fabcheck nccl-log`'s classifier, in the error fabtrain prints.
int run_train(const TrainOptions& o, const std::vector<std::string>& argv) {
  NcclLogPlan nccl_log;
  try {
    return run_train_with(o, argv, nccl_log);
  } catch (const CommError& e) {
    const std::string why = explain_nccl_failure(nccl_log);
    if (why.empty()) throw;
    throw CommError(std::string(e.what()) + "\n" + why);
  }
}

namespace {

int run_train_with(const TrainOptions& o, const std::vector<std::string>& argv,
                   NcclLogPlan& nccl_log) {
  // 1. Launch: --nproc N makes this process the parent of N local ranks and nothing else.
  Environment env = Environment::from_process();
  if (o.nproc > 1 && !env.has("FABTRAIN_LOCAL_SPAWN")) {
    if (env.has("RANK") || env.has("SLURM_PROCID") || env.has("OMPI_COMM_WORLD_RANK")) {
      throw UsageError("--nproc " + std::to_string(o.nproc) + " under a launcher that already started ranks "
                       "(RANK, SLURM_PROCID or OMPI_COMM_WORLD_RANK is set): drop --nproc");
    }
    uint16_t port = env.has("MASTER_PORT") ? detect_launch_env(env, std::nullopt).master_port : pick_free_port();
    SpawnResult r = spawn_local_ranks(argv, o.nproc, port);
    if (r.exit_code != 0) std::cerr << "[fabtrain] error: " << r.message << std::endl;
    return r.exit_code;
  }
  LaunchEnv launch = detect_launch_env(env, std::nullopt);
  TrainLog log(launch.rank);
  log.info("launcher " + launch.launcher + " (" + launch.evidence + "): rank " + std::to_string(launch.rank) + "/" +
           std::to_string(launch.world_size) + ", local " + std::to_string(launch.local_rank) + "/" +
           std::to_string(launch.local_world_size) + ", master " + launch.master_addr + ":" +
           std::to_string(launch.master_port) + " (port from " + launch.master_port_source + ")");
  validate_degrees(launch.world_size, o.dp == 0 ? std::max(1, launch.world_size / std::max(1, o.pp)) : o.dp, o.pp);
  validate_pipeline_flags(o);

  // 2. Fabric: the profile's env for this host and the node check, before any communicator.
  FabricSetup fabric = setup_fabric(o.profile, o.skip_validate, log);

  // 3. Device and communicator. NCCL's log is requested before its communicator exists, so the
  //    network it picks can be read back after the first collectives.
  const TrainDevice device = choose_train_device(o.device, launch, fabric.locality);
  log.info("device " + (device.cuda ? "cuda:" + std::to_string(device.index) + " " + device.bus_id : std::string("cpu")) +
           " (" + device.reason + ")");
  if (device.cuda && o.step_impl == "host") {
    throw UsageError("--step-impl host steps the shards' host copies, but on a GPU they live on the device: use "
                     "--step-impl auto (or tensor)");
  }
  const bool tensor_step = o.step_impl == "tensor" || (o.step_impl == "auto" && device.cuda);
  const std::optional<std::string> required_transport =
      o.require_transport.empty() ? std::nullopt : std::optional<std::string>(o.require_transport);
  if (required_transport && !device.cuda) {
    throw UsageError("--require-transport " + o.require_transport + " checks the network NCCL uses, but this rank "
                     "trains on CPU over Gloo (" + device.reason + "): drop the flag or run on GPUs");
  }
  if (device.cuda) {
    nccl_log = prepare_nccl_log(o.output_dir, launch.rank, required_transport.has_value());
    if (!nccl_log.adjustments.empty()) log.info("NCCL log: " + nccl_log.adjustments);
  }
  CommOptions co;
  co.rank = launch.rank;
  co.world_size = launch.world_size;
  co.master_addr = launch.master_addr;
  co.master_port = launch.master_port;
  co.store_hosted_by_agent = launch.store_hosted_by_agent;
  co.socket_ifname = fabric.gloo_socket_ifname;
  co.rendezvous_timeout_ms = o.rendezvous_timeout_ms;
  co.collective_timeout_ms = o.collective_timeout_ms;
  co.cuda_device = device.cuda ? device.index : -1;
  std::unique_ptr<Comm> comm = make_comm(co);
  log.info("backend " + comm->backend() + ", transport " + comm->transport());
  apply_thread_plan(env, launch.local_world_size, o, log);
  keep_freed_buffers_for_reuse();

  // 4. Model: every rank loads (or seeds) the same weights; sharding broadcasts rank 0's.
  LoadOptions lo;
  lo.seed = o.seed;
  LoadedModel loaded = load_pretrained(o.model_dir, lo);
  log.info("model " + o.model_dir + (loaded.random_init ? " (no weights: seeded random init)" : "") + ": " +
           std::to_string(loaded.config.num_hidden_layers) + " layers, hidden " + std::to_string(loaded.config.hidden_size));

  // 5. Data: the same global order on every rank; each takes its slice (sampler.h).
  auto tokenizer = load_tokenizer(o.model_dir);
  LoadedData data = load_dataset(o.data, *tokenizer, data_options(o, loaded.config.vocab_size));
  if (data.train_stats.lines_skipped > 0) {  // --skip-bad-lines: say what was dropped, and why
    std::string first;
    for (const auto& why : data.train_stats.skip_reasons) first += "; " + why;
    log.warn("data " + o.data + ": skipped " + std::to_string(data.train_stats.lines_skipped) +
             " bad lines (--skip-bad-lines)" + first);
  }
  // --pp > 1: the stages run their own loop (app/pipeline_train.cc).
  if (o.pp > 1) {
    return run_pipeline_train(o, {launch, co, *comm, device, tensor_step, std::move(loaded), std::move(data), nccl_log,
                                  required_transport}, log);
  }
  const int64_t batches_per_epoch = static_cast<int64_t>(
      epoch_batches(data.train.size(), o.seed, 0, comm->rank(), comm->world_size(), o.micro_batch_size).size());
  const int64_t steps_per_epoch = batches_per_epoch / o.grad_accum;
  if (steps_per_epoch == 0) {
    throw UsageError(o.data + ": " + std::to_string(data.train.size()) + " examples of " + std::to_string(o.max_length) +
                     " tokens are too few for one step of " + std::to_string(comm->world_size()) + " ranks x micro-batch " +
                     std::to_string(o.micro_batch_size) + " x grad-accum " + std::to_string(o.grad_accum));
  }
  const int64_t total_steps = o.max_steps > 0 ? o.max_steps : o.num_epochs * steps_per_epoch;
  log.info("data " + o.data + ": " + std::to_string(data.train.size()) + " train / " + std::to_string(data.valid.size()) +
           " valid examples, " + std::to_string(steps_per_epoch) + " steps per epoch, " + std::to_string(total_steps) + " steps");

  // 6. Sharding, optimizer, schedule.
  auto mb = std::make_shared<MicroBatch>();
  // Precision: the model's weights stay fp32 (the shards are the master copy); a gathered unit is
  // handed to its stage in the compute dtype.
  const torch::ScalarType compute_dtype = parse_dtype_name(o.torch_dtype);
  loaded.model->set_compute_dtype(compute_dtype);
  loaded.model->set_device(device.device());
  LlamaPlan plan = plan_llama(loaded.model, mb);
  check_memory_options(o);
  ShardedModel model(*comm, std::move(plan.units), std::move(plan.stages), o.recompute, compute_dtype,
                     tensor_step ? std::optional<at::Device>(device.device()) : std::nullopt);
  if (o.offload_activations) {
    model.enable_activation_offload();
    if (device.cuda) {
      log.info("activation offload: each layer's checkpointed input waits in pinned host memory");
    } else {
      log.warn("--offload-activations on CPU copies the checkpoints within host memory: it saves nothing here "
               "(it is for GPU runs)");
    }
  }
  // --fused-step: the optimizer runs inside the backward, unit by unit (the lr and the squared
  // gradient norm of the step are set and read around forward_backward).
  std::unique_ptr<ShardOptimizer> opt;
  double fused_lr = 0.0;
  at::Tensor fused_sq;
  if (o.fused_step) {
    model.enable_fused_step([&](size_t u, const float* g) {
      const int64_t n = model.shards()[u].shard_numel;
      at::Tensor t = torch::from_blob(const_cast<float*>(g), {n}, torch::TensorOptions(torch::kFloat32).device(model.device()));
      // The norm in fp32 (ATen accumulates it in a wider type), squared in double: a dtype=double
      // norm would first copy the whole unit to double, twice the gradient's memory.
      fused_sq.add_(at::linalg_vector_norm(t, 2).to(torch::kDouble).square());
      opt->step_unit(model.shards(), u, g, fused_lr);
    });
    log.info("fused step: each unit is updated in the backward as its gradient arrives; no gradient shards kept");
  }
  // The shards' broadcast was NCCL's first collective: its log now names the network.
  if (device.cuda) check_nccl_transport(nccl_log, required_transport, *comm, log);
  std::optional<DynamicLossScale> scaler;
  if (compute_dtype == torch::kFloat16) scaler = DynamicLossScale{o.initial_loss_scale, 0, o.loss_scale_window};
  log.info("precision: compute " + o.torch_dtype + "; master weights, optimizer state and gradient reduction float32" +
           (scaler ? "; dynamic loss scale from " + std::to_string(o.initial_loss_scale) + ", doubled after " +
                         std::to_string(o.loss_scale_window) + " finite steps"
                   : std::string()));
  const AdamWOptions adamw_options{o.beta1, o.beta2, o.eps, o.weight_decay};
  AdafactorOptions adafactor_options;
  adafactor_options.weight_decay = o.weight_decay;
  ShardSum sum_across = [&](float* d, size_t n) { comm->allreduce_sum(d, n); };
  if (tensor_step) {
    opt = o.optimizer == "adamw"
              ? make_tensor_adamw(model.shards(), model.param_tensors(), model.grad_tensors(), adamw_options)
              : make_tensor_adafactor(model.shards(), model.param_tensors(), model.grad_tensors(), adafactor_options,
                                      sum_across);
  } else {
    opt = o.optimizer == "adamw" ? make_adamw(model.shards(), adamw_options)
                                 : make_adafactor(model.shards(), adafactor_options, sum_across);
  }
  log.info("optimizer step: " + std::string(tensor_step ? "tensor ops on the shards' device" : "host loops") +
           (tensor_step && o.optimizer == "adamw" ? " (fused AdamW kernel)" : ""));
  const CosineSchedule schedule{o.lr, o.warmup_steps, total_steps, o.min_lr_ratio};
  const int64_t state_bytes = model.state_bytes() + opt->state_bytes();
  log.info("sharded " + std::to_string(model.shards().size()) + " units over " + std::to_string(comm->world_size()) +
           " ranks: params+grads+" + opt->name() + " state " + std::to_string(state_bytes) + " bytes per rank (" +
           std::to_string(model.unsharded_param_numel()) + " parameters)" + (o.recompute ? ", recompute on" : ""));

  // 7. Resume from the newest complete checkpoint.
  fs::create_directories(o.output_dir);
  TrainState state;
  state.seed = o.seed;
  if (o.resume) {
    std::vector<std::string> warnings;
    if (auto resumed = resume_latest(*comm, o.output_dir, model.shards(), *opt, &warnings)) {
      state = *resumed;
      model.sync_params_from_host();
      log.info("resumed from step " + std::to_string(state.step) + " (epoch " + std::to_string(state.epoch) + ")");
      if (scaler && state.loss_scale > 0) {
        scaler->scale = state.loss_scale;
        scaler->good_steps = state.loss_scale_good_steps;
      }
      // The data position in this run's units: examples of the epoch's order already consumed,
      // over this run's examples per micro-batch index (all ranks). Equal for an unchanged job;
      // after a change of world or micro-batch size a partial batch is replayed, never skipped.
      if (state.examples_in_epoch >= 0) {
        const int64_t per_batch = o.micro_batch_size * comm->world_size();
        state.batch_in_epoch = state.examples_in_epoch / per_batch;
        if (const int64_t replay = state.examples_in_epoch % per_batch; replay != 0) {
          log.warn(std::to_string(replay) + " examples before the checkpoint are seen again: its position (" +
                   std::to_string(state.examples_in_epoch) + " examples) is not a multiple of this run's " +
                   std::to_string(per_batch) + " examples per micro-batch");
        }
      }
    }
    for (const auto& w : warnings) log.warn(w);
  }
  log.open_metrics(fs::path(o.output_dir) / "metrics.jsonl");
  SaveRequest save{o.output_dir, state, to_hf_json(loaded.config), o.model_dir, o.save_total_limit,
                   o.save_on_each_node, launch.local_rank};
  auto checkpoint = [&] {
    save.state = state;
    model.sync_params_to_host();
    std::vector<std::string> warnings;
    fs::path dir = save_checkpoint(*comm, save, model.shards(), *opt, &warnings);
    log.info("checkpoint " + dir.string());
    for (const auto& w : warnings) log.info(w);
  };

  // 8. Monitoring and control (run_monitor.h): signals, the control socket, TensorBoard, progress.
  RunMonitor monitor(o.output_dir, o.no_control, comm->rank(), launch.local_rank, env, log);
  int64_t saved_at = -1;
  auto save_now = [&] {
    if (saved_at == state.step) return;
    monitor.saving(state.step, total_steps);
    checkpoint();
    saved_at = state.step;
  };

  // 9. The loop: grad-accum micro-steps, clip, step, log, eval, checkpoint, control.
  int64_t steps_this_process = 0;
  std::vector<std::vector<size_t>> batches;
  int64_t batches_epoch = -1;
  while (state.step < total_steps) {
    if (batches_epoch != state.epoch) {
      batches = epoch_batches(data.train.size(), o.seed, state.epoch, comm->rank(), comm->world_size(), o.micro_batch_size);
      batches_epoch = state.epoch;
    }
    if (state.batch_in_epoch + o.grad_accum > static_cast<int64_t>(batches.size())) {
      ++state.epoch;
      state.batch_in_epoch = 0;
      state.examples_in_epoch = 0;
      continue;
    }
    // --trace-steps: ATen's op profiler over a few steps after two warm-up steps, one Chrome
    // trace per rank and step (chrome://tracing, Perfetto); the destructor writes the file.
    std::unique_ptr<torch::autograd::profiler::RecordProfile> trace;
    if (o.trace_steps > 0 && steps_this_process >= 2 && steps_this_process < 2 + o.trace_steps) {
      fs::create_directories(fs::path(o.output_dir) / "trace");
      trace = std::make_unique<torch::autograd::profiler::RecordProfile>(
          (fs::path(o.output_dir) / "trace" /
           ("rank-" + std::to_string(comm->rank()) + "-step-" + std::to_string(state.step + 1) + ".json"))
              .string());
    }
    const auto t0 = Clock::now();
    std::vector<Batch> micro;
    double counts[2] = {0.0, 0.0};  // target tokens, real tokens (this rank, then global)
    for (int64_t a = 0; a < o.grad_accum; ++a) {
      micro.push_back(make_batch(data.train, batches[state.batch_in_epoch + a]));
      counts[0] += static_cast<double>(target_tokens(micro.back().labels));
      counts[1] += micro.back().attention_mask.sum().item<double>();
    }
    comm->allreduce_sum(counts, 2);
    const double lr = schedule.lr_at(state.step);
    if (o.fused_step) {
      fused_lr = lr;
      fused_sq = torch::zeros({}, torch::TensorOptions(torch::kDouble).device(model.device()));
      opt->begin_step();
    }
    double loss = 0.0;
    model.zero_grad();
    for (const Batch& b : micro) {
      load_micro_batch(*mb, b, model.device(), std::max(1.0, counts[0]));
      loss += model.forward_backward(scaler ? scaler->scale : 1.0);
    }
    comm->allreduce_sum(&loss, 1);
    // fp16: every rank must agree whether the step is applied, so the finiteness check is summed.
    bool apply = true;
    double scale_used = 1.0;
    if (scaler) {
      scale_used = scaler->scale;
      const bool finite = tensor_step ? tensor_grads_finite(model.grad_tensors()) : grads_finite(model.shards());
      double bad = finite ? 0.0 : 1.0;
      comm->allreduce_sum(&bad, 1);
      apply = scaler->update(bad == 0.0);
      if (apply) {
        if (tensor_step) {
          tensor_scale_grads(model.grad_tensors(), static_cast<float>(1.0 / scale_used));
        } else {
          scale_grads(model.shards(), static_cast<float>(1.0 / scale_used));
        }
      } else {
        log.warn("step " + std::to_string(state.step + 1) + ": non-finite gradients at loss scale " +
                 std::to_string(scale_used) + ": update skipped, loss scale now " + std::to_string(scaler->scale));
      }
      state.loss_scale = scaler->scale;
      state.loss_scale_good_steps = scaler->good_steps;
    }
    auto sum_doubles = [&](double* d, size_t n) { comm->allreduce_sum(d, n); };
    double grad_norm = std::nan("");
    if (o.fused_step) {  // already applied in the backward: the norm is only reported
      double sq = fused_sq.item<double>();
      comm->allreduce_sum(&sq, 1);
      grad_norm = std::sqrt(sq);
    } else if (apply) {
      grad_norm = tensor_step ? tensor_clip_grad_norm(model.grad_tensors(), o.max_grad_norm, sum_doubles)
                              : clip_grad_norm(model.shards(), o.max_grad_norm, sum_doubles);
      opt->step(model.shards(), lr);
    }
    model.prefetch_first_stage();
    state.batch_in_epoch += o.grad_accum;
    state.examples_in_epoch = state.batch_in_epoch * o.micro_batch_size * comm->world_size();
    ++state.step;
    ++steps_this_process;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const double tokens_per_s = counts[1] / (ms / 1000.0);
    const int64_t peak_memory = device.cuda ? cuda_peak_allocated_bytes(device) : max_rss_bytes();
    if (state.step % o.log_every == 0 || state.step == total_steps) {
      Json m = {{"step", state.step}, {"total_steps", total_steps}, {"epoch", state.epoch}, {"loss", loss},
                {"lr", lr}, {"grad_norm", grad_norm}, {"tokens", counts[1]}, {"tokens_per_s", tokens_per_s},
                {"step_time_ms", ms}, {"state_bytes_per_rank", state_bytes}, {"max_rss_bytes", max_rss_bytes()}};
      if (device.cuda) m["gpu_peak_bytes"] = cuda_peak_allocated_bytes(device);
      if (scaler) {
        m["loss_scale"] = scale_used;
        m["update_skipped"] = !apply;
      }
      log.step(m);
    }
    if (o.eval_every > 0 && !data.valid.empty() && (state.step % o.eval_every == 0 || state.step == total_steps)) {
      const double v = validation_loss(model, *mb, data.valid, o, *comm);
      log.eval({{"step", state.step}, {"valid_loss", v}, {"valid_perplexity", std::exp(v)}});
      monitor.after_eval(state.step, v);
    }
    if (o.save_every > 0 && state.step % o.save_every == 0 && state.step < total_steps) save_now();
    // Every rank acts on the same step: what any rank's signals or node's socket asked for.
    const control::Action action =
        monitor.after_step(*comm, {state.step, total_steps, loss, lr, tokens_per_s, grad_norm, peak_memory});
    if (action == control::Action::kSave) {
      log.info("save requested: checkpoint at step " + std::to_string(state.step));
      save_now();
    } else if (action == control::Action::kStop) {
      log.info("stop requested" + monitor.signal_note() + ": checkpoint at step " + std::to_string(state.step) +
               ", then exit");
      save_now();
      comm->barrier();
      return 0;
    } else if (action == control::Action::kAbort) {
      log.warn("abort requested" + monitor.signal_note() + ": exiting at step " + std::to_string(state.step) +
               " without a checkpoint");
      return kAbortExitCode;
    }
    if (o.exit_after_steps > 0 && steps_this_process >= o.exit_after_steps && state.step < total_steps) {
      log.info("--exit-after-steps " + std::to_string(o.exit_after_steps) + ": stopping at step " +
               std::to_string(state.step) + " without a final checkpoint");
      comm->barrier();
      return 0;
    }
  }

  // 10. The final checkpoint (export it with `fabtrain export`).
  if (steps_this_process > 0) {
    save_now();
  } else {
    log.info("the newest checkpoint is already at step " + std::to_string(state.step) + ": nothing to train");
  }
  log.info("done: " + std::to_string(state.step) + " steps");
  return 0;
}

}  // namespace

}  // namespace fabkit::trainer
