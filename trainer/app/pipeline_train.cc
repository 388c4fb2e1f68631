// `fabtrain train --pp S`: the pipeline run as a story (pipeline_train.h), numbered after
// train_command.cc's sections it replaces from 6 on.
#include "trainer/app/pipeline_train.h"
#include "trainer/app/run_monitor.h"

#include <torch/torch.h>

#include <unistd.h>

#include <chrono>
#include <cmath>

#include "common/errors.h"
#include "trainer/app/pipeline_checkpoint.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/data/batch.h"
#include "trainer/data/sampler.h"
#include "trainer/model/ignore_label.h"
#include "trainer/optim/loss_scale.h"
#include "trainer/optim/optimizer.h"
#include "trainer/optim/schedule.h"
#include "trainer/optim/tensor_optimizers.h"
#include "trainer/parallel/pipeline_plan.h"
#include "trainer/parallel/pipeline_runner.h"
#include "trainer/parallel/pipeline_split.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// Per rank, gathered to rank 0 for the metrics line (raw bytes: integers stay exact).
struct RankStats {
  int64_t bytes_sent;
  int64_t activation_bytes_peak;
  int64_t peak_in_flight;
  double recv_wait_ms;
};


// Mean validation loss: replica r of every stage takes slice r of the validation set; the last
// stages' sums (loss, target tokens) cross the world once (the other stages add zeros).
double validation_loss(PipelineRunner& runner, MicroBatch& mb, const std::vector<Example>& valid,
                       const TrainOptions& o, int replica, int replicas, Comm& world, bool last,
                       const at::Device& device, int64_t hidden) {
  const auto batches = epoch_batches(valid.size(), o.seed, 0, replica, replicas,
                                     static_cast<size_t>(o.micro_batch_size));
  std::vector<Batch> b;
  for (const auto& idx : batches) b.push_back(make_batch(valid, idx));
  double acc[2] = {0.0, 0.0};  // loss sum, target tokens
  acc[0] = runner.run_forward_only(
      static_cast<int>(b.size()),
      [&](int i) {
        mb.input_ids = b[i].input_ids.to(device);
        mb.labels = b[i].labels.to(device);
        mb.attention_mask = b[i].attention_mask.to(device);
        mb.loss_normalizer = 1.0;
      },
      [&](int i) {
        return std::vector<int64_t>{b[i].input_ids.size(0), b[i].input_ids.size(1), hidden};
      });
  if (last) {
    for (const Batch& x : b) acc[1] += x.labels.slice(1, 1).ne(kIgnoreLabel).sum().item<double>();
  } else {
    acc[0] = 0.0;
  }
  world.allreduce_sum(acc, 2);
  return acc[1] > 0 ? acc[0] / acc[1] : 0.0;
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

void validate_pipeline_flags(const TrainOptions& o) {
  if (o.pp == 1) {
    if (o.micro_batches > 0) {
      throw UsageError("--micro-batches " + std::to_string(o.micro_batches) +
                       " splits a pipeline's batch, but --pp is 1: use --grad-accum " +
                       std::to_string(o.micro_batches) + " for the same global batch, or set --pp");
    }
    if (!o.stage_layers.empty())
      throw UsageError("--stage-layers " + o.stage_layers + " needs --pp > 1");
    if (o.resume) refuse_other_pipeline_degree(o.output_dir, 1);
    return;
  }
  parse_pipe_schedule(o.schedule);
  // Tags are 2 * micro-batch + 1 and must stay below the backend's 2^30.
  if (o.micro_batches < 0 || o.micro_batches > (1 << 20)) {
    throw UsageError("--micro-batches " + std::to_string(o.micro_batches) +
                     " is out of range: give 1 to 1048576");
  }
  auto refuse = [&](const std::string& flag, const std::string& fix) {
    throw UsageError(flag + " does not combine with --pp " + std::to_string(o.pp) + " yet: " + fix);
  };
  if (o.grad_accum != 1) {
    refuse("--grad-accum " + std::to_string(o.grad_accum),
           "a pipeline accumulates its micro-batches; use --micro-batches " +
               std::to_string(o.grad_accum * o.pp));
  }
  if (o.recompute) refuse("--recompute", "drop it (activation memory: use --schedule 1f1b)");
  if (o.save_on_each_node) refuse("--save-on-each-node", "write checkpoints to a shared --output");
  if (o.fused_step) refuse("--fused-step", "drop it (the stages step after the pipeline's backward)");
  if (o.offload_activations) refuse("--offload-activations", "drop it (activation memory: use --schedule 1f1b)");
  if (o.resume) refuse_other_pipeline_degree(o.output_dir, o.pp);
}

int run_pipeline_train(const TrainOptions& o, PipelineRunInputs in, TrainLog& log) {
  Comm& world = in.world;
  const int S = o.pp, D = world.world_size() / o.pp;
  const int stage = world.rank() / D, replica = world.rank() % D;
  const int M = o.micro_batches > 0 ? o.micro_batches : 4 * S;
  const PipeSchedule kind = parse_pipe_schedule(o.schedule);
  const LlamaConfig& cfg = in.loaded.config;
  if (cfg.tie_word_embeddings) {
    throw UsageError(
        o.model_dir + " ties the head to the embedding (tie_word_embeddings true): with --pp " +
        std::to_string(S) +
        " the first and last stage would share one matrix, which fabtrain does not "
        "split; use --pp 1 (sharded data parallel) or a model with tie_word_embeddings false");
  }

  // 6. Stages: the layer split, the stage's communicator over its replicas, its sharded units.
  const StageParamCounts counts = count_stage_params(in.loaded.model);
  const std::vector<int> split =
      o.stage_layers.empty()
          ? balance_stage_layers(counts.layers, counts.embed, counts.head, S)
          : parse_stage_layers(o.stage_layers, static_cast<int>(cfg.num_hidden_layers), S);
  const std::vector<int> starts = stage_layer_starts(split);
  std::vector<int> members;
  for (int d = 0; d < D; ++d) members.push_back(stage * D + d);
  std::unique_ptr<Comm> stage_comm =
      make_group_comm(in.comm_options, members, "pp-stage-" + std::to_string(stage));
  log.info("pipeline: " + std::to_string(S) + " stages x " + std::to_string(D) +
           " data-parallel replicas, schedule " + to_string(kind) + ", " + std::to_string(M) +
           " micro-batches of " + std::to_string(o.micro_batch_size) +
           " per replica; layers per stage " + join(split) +
           (o.stage_layers.empty()
                ? " (balanced by parameters, embedding on the first, head on the last)"
                : " (--stage-layers)") +
           "; bubble (S-1)/(M+S-1) = " + std::to_string(bubble_fraction(S, M)));
  auto mb = std::make_shared<MicroBatch>();
  const torch::ScalarType compute_dtype = parse_dtype_name(o.torch_dtype);
  in.loaded.model->set_compute_dtype(compute_dtype);
  in.loaded.model->set_device(in.device.device());
  LlamaPlan plan = plan_llama_stage(in.loaded.model, mb, starts[stage], starts[stage + 1],
                                    stage == 0, stage == S - 1);
  ShardedModel model(*stage_comm, std::move(plan.units), std::move(plan.stages), false,
                     compute_dtype,
                     in.tensor_step ? std::optional<at::Device>(in.device.device()) : std::nullopt);
  world.barrier();  // NCCL: a world collective has run, so its log names the network
  if (in.device.cuda) check_nccl_transport(in.nccl_log, in.required_transport, world, log);
  std::unique_ptr<ShardOptimizer> opt;
  const AdamWOptions adamw_options{o.beta1, o.beta2, o.eps, o.weight_decay};
  AdafactorOptions adafactor_options;
  adafactor_options.weight_decay = o.weight_decay;
  // Adafactor's row/column sums span the shards of one unit: the stage's replicas hold them.
  ShardSum sum_in_stage = [&](float* d, size_t n) { stage_comm->allreduce_sum(d, n); };
  if (in.tensor_step) {
    opt = o.optimizer == "adamw"
              ? make_tensor_adamw(model.shards(), model.param_tensors(), model.grad_tensors(),
                                  adamw_options)
              : make_tensor_adafactor(model.shards(), model.param_tensors(), model.grad_tensors(),
                                      adafactor_options, sum_in_stage);
  } else {
    opt = o.optimizer == "adamw" ? make_adamw(model.shards(), adamw_options)
                                 : make_adafactor(model.shards(), adafactor_options, sum_in_stage);
  }
  const int64_t state_bytes = shard_state_bytes(model.shards()) + opt->state_bytes();
  log.info("rank 0 (stage 0) holds " + std::to_string(model.shards().size()) +
           " units: params+grads+" + opt->name() + " state " + std::to_string(state_bytes) +
           " bytes");

  // Data: replica r of every stage reads the same micro-batches (sampler.h with D ranks).
  const size_t n_train = in.data.train.size();
  const int64_t steps_per_epoch =
      static_cast<int64_t>(
          epoch_batches(n_train, o.seed, 0, replica, D, o.micro_batch_size).size()) /
      M;
  if (steps_per_epoch == 0) {
    throw UsageError(o.data + ": " + std::to_string(n_train) +
                     " examples are too few for one step of " + std::to_string(D) + " replicas x " +
                     std::to_string(M) + " micro-batches x micro-batch " +
                     std::to_string(o.micro_batch_size));
  }
  const int64_t total_steps = o.max_steps > 0 ? o.max_steps : o.num_epochs * steps_per_epoch;
  const CosineSchedule schedule{o.lr, o.warmup_steps, total_steps, o.min_lr_ratio};

  // 7. Resume: each stage from its own directory, all at one step.
  fs::create_directories(o.output_dir);
  TrainState state;
  state.seed = o.seed;
  // fp16: the dynamic loss scale as at --pp 1 (loss_scale.h); the last stage starts the backward
  // from it, and every rank agrees (over the world) whether the step is applied.
  std::optional<DynamicLossScale> scaler;
  if (compute_dtype == torch::kFloat16) {
    scaler = DynamicLossScale{o.initial_loss_scale, 0, o.loss_scale_window};
  }
  if (o.resume) {
    std::vector<std::string> warnings;
    if (auto r = resume_pipeline(world, *stage_comm, o.output_dir, stage, S, model.shards(), *opt,
                                 &warnings)) {
      state = *r;
      model.sync_params_from_host();
      log.info("resumed from step " + std::to_string(state.step) + " (epoch " +
               std::to_string(state.epoch) + ")");
      if (scaler && state.loss_scale > 0) {
        scaler->scale = state.loss_scale;
        scaler->good_steps = state.loss_scale_good_steps;
      }
      if (state.examples_in_epoch >= 0)
        state.batch_in_epoch = state.examples_in_epoch / (o.micro_batch_size * D);
    }
    for (const auto& w : warnings) log.warn(w);
  }
  log.open_metrics(fs::path(o.output_dir) / "metrics.jsonl");
  SaveRequest save{pipeline_stage_dir(o.output_dir, stage, S),
                   state,
                   to_hf_json(cfg),
                   o.model_dir,
                   o.save_total_limit,
                   false,
                   in.launch.local_rank};
  int64_t saved_at = -1;
  auto checkpoint = [&] {
    if (saved_at == state.step) return;
    saved_at = state.step;
    save.state = state;
    model.sync_params_to_host();
    std::vector<std::string> warnings;
    fs::path dir = save_checkpoint(*stage_comm, save, model.shards(), *opt, &warnings);
    world.barrier();  // every stage's checkpoint is complete before the run goes on (or ends)
    log.info("checkpoint " + dir.string() + " (and the other stages' beside it)");
    for (const auto& w : warnings) log.info(w);
  };

  // Monitoring and control as at --pp 1 (run_monitor.h). The action is agreed over the world
  // after each step, so every stage stops at the same step.
  RunMonitor monitor(o.output_dir, o.no_control, world.rank(), in.launch.local_rank, Environment::from_process(), log);

  // 8. The loop: one pipelined step (all micro-batches), clip over every stage, step, log.
  PipelineRunner runner(world, model, stage, S, stage > 0 ? world.rank() - D : -1,
                        stage < S - 1 ? world.rank() + D : -1, kind, M, compute_dtype);
  log.info("stage " + std::to_string(stage) + " holds at most " +
           std::to_string(peak_in_flight(runner.actions())) + " micro-batches' activations (" +
           to_string(kind) + ")");
  int64_t steps_this_process = 0;
  std::vector<std::vector<size_t>> batches;
  int64_t batches_epoch = -1;
  while (state.step < total_steps) {
    if (batches_epoch != state.epoch) {
      batches = epoch_batches(n_train, o.seed, state.epoch, replica, D, o.micro_batch_size);
      batches_epoch = state.epoch;
    }
    if (state.batch_in_epoch + M > static_cast<int64_t>(batches.size())) {
      ++state.epoch;
      state.batch_in_epoch = 0;
      state.examples_in_epoch = 0;
      continue;
    }
    const auto t0 = Clock::now();
    std::vector<Batch> micro;
    double tokens[2] = {0.0, 0.0};  // target tokens, real tokens (this replica, then all)
    for (int a = 0; a < M; ++a) {
      micro.push_back(make_batch(in.data.train, batches[state.batch_in_epoch + a]));
      tokens[0] += micro.back().labels.slice(1, 1).ne(kIgnoreLabel).sum().item<double>();
      tokens[1] += micro.back().attention_mask.sum().item<double>();
    }
    stage_comm->allreduce_sum(tokens, 2);
    model.zero_grad();
    auto load = [&](int i) {
      mb->input_ids = micro[i].input_ids.to(model.device());
      mb->labels = micro[i].labels.to(model.device());
      mb->attention_mask = micro[i].attention_mask.to(model.device());
      mb->loss_normalizer = std::max(1.0, tokens[0]);
    };
    auto shape = [&](int i) {
      return std::vector<int64_t>{micro[i].input_ids.size(0), micro[i].input_ids.size(1),
                                  cfg.hidden_size};
    };
    const double scale_used = scaler ? scaler->scale : 1.0;
    double loss = runner.run_step(load, shape, scale_used);
    world.allreduce_sum(&loss, 1);  // only the last stage's replicas hold a share
    bool apply = true;
    if (scaler) {
      const bool finite =
          in.tensor_step ? tensor_grads_finite(model.grad_tensors()) : grads_finite(model.shards());
      double bad = finite ? 0.0 : 1.0;
      world.allreduce_sum(&bad, 1);
      apply = scaler->update(bad == 0.0);
      if (apply && in.tensor_step) {
        tensor_scale_grads(model.grad_tensors(), static_cast<float>(1.0 / scale_used));
      } else if (apply) {
        scale_grads(model.shards(), static_cast<float>(1.0 / scale_used));
      } else {
        log.warn("step " + std::to_string(state.step + 1) +
                 ": non-finite gradients at loss scale " + std::to_string(scale_used) +
                 ": update skipped, loss scale now " + std::to_string(scaler->scale));
      }
      state.loss_scale = scaler->scale;
      state.loss_scale_good_steps = scaler->good_steps;
    }
    auto sum_doubles = [&](double* d, size_t n) { world.allreduce_sum(d, n); };
    // Stages hold disjoint units and replicas disjoint slices: the world's sum is the full norm.
    const double grad_norm =
        !apply           ? std::nan("")
        : in.tensor_step ? tensor_clip_grad_norm(model.grad_tensors(), o.max_grad_norm, sum_doubles)
                         : clip_grad_norm(model.shards(), o.max_grad_norm, sum_doubles);
    const double lr = schedule.lr_at(state.step);
    if (apply) opt->step(model.shards(), lr);
    state.batch_in_epoch += M;
    state.examples_in_epoch = state.batch_in_epoch * o.micro_batch_size * D;
    ++state.step;
    ++steps_this_process;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const double tokens_per_s = tokens[1] / (ms / 1000.0);
    const PipelineStepStats& ps = runner.stats();
    RankStats mine{ps.bytes_sent, ps.activation_bytes_peak, ps.peak_in_flight, ps.recv_wait_ms};
    std::vector<RankStats> all(static_cast<size_t>(world.world_size()));
    world.allgather_bytes(&mine, sizeof(mine), all.data());
    if (state.step % o.log_every == 0 || state.step == total_steps) {
      int64_t total_sent = 0;
      Json sent = Json::array(), act = Json::array(), held = Json::array(), wait = Json::array();
      for (int s = 0; s < S; ++s) {
        int64_t s_sent = 0, s_act = 0, s_held = 0;
        double s_wait = 0;
        for (int d = 0; d < D; ++d) {  // per stage: the sum of its replicas' sends, the worst peak
          const RankStats& r = all[static_cast<size_t>(s * D + d)];
          s_sent += r.bytes_sent;
          s_act = std::max(s_act, r.activation_bytes_peak);
          s_held = std::max(s_held, r.peak_in_flight);
          s_wait = std::max(s_wait, r.recv_wait_ms);
        }
        total_sent += s_sent;
        sent.push_back(s_sent);
        act.push_back(s_act);
        held.push_back(s_held);
        wait.push_back(s_wait / ms);
      }
      Json m = {{"step", state.step},
                {"total_steps", total_steps},
                {"epoch", state.epoch},
                {"loss", loss},
                {"lr", lr},
                {"grad_norm", grad_norm},
                {"tokens", tokens[1]},
                {"tokens_per_s", tokens_per_s},
                {"step_time_ms", ms},
                {"state_bytes_per_rank", state_bytes},
                {"max_rss_bytes", max_rss_bytes()},
                {"pp_schedule", to_string(kind)},
                {"pp_bytes_sent", total_sent},
                {"pp_stage_bytes_sent", sent},
                {"bubble_fraction", bubble_fraction(S, M)},
                {"pp_stage_recv_wait_fraction", wait},
                {"pp_stage_peak_micro_batches", held},
                {"pp_stage_activation_bytes_peak", act}};
      if (scaler) {
        m["loss_scale"] = scale_used;
        m["update_skipped"] = !apply;
      }
      log.step(m);
    }
    if (o.eval_every > 0 && !in.data.valid.empty() &&
        (state.step % o.eval_every == 0 || state.step == total_steps)) {
      const double v = validation_loss(runner, *mb, in.data.valid, o, replica, D, world,
                                       stage == S - 1, model.device(), cfg.hidden_size);
      log.eval({{"step", state.step}, {"valid_loss", v}, {"valid_perplexity", std::exp(v)}});
      monitor.after_eval(state.step, v);
    }
    if (o.save_every > 0 && state.step % o.save_every == 0 && state.step < total_steps)
      checkpoint();
    const int64_t peak_memory = in.device.cuda ? cuda_peak_allocated_bytes(in.device) : max_rss_bytes();
    const control::Action action =
        monitor.after_step(world, {state.step, total_steps, loss, lr, tokens_per_s, grad_norm, peak_memory});
    if (action == control::Action::kSave) {
      log.info("save requested: checkpoint at step " + std::to_string(state.step));
      checkpoint();
    } else if (action == control::Action::kStop) {
      log.info("stop requested" + monitor.signal_note() + ": checkpoint at step " +
               std::to_string(state.step) + ", then exit");
      checkpoint();
      return 0;
    } else if (action == control::Action::kAbort) {
      log.warn("abort requested" + monitor.signal_note() + ": exiting at step " +
               std::to_string(state.step) + " without a checkpoint");
      return kAbortExitCode;
    }
    if (o.exit_after_steps > 0 && steps_this_process >= o.exit_after_steps &&
        state.step < total_steps) {
      log.info("--exit-after-steps " + std::to_string(o.exit_after_steps) + ": stopping at step " +
               std::to_string(state.step) + " without a final checkpoint");
      world.barrier();
      return 0;
    }
  }

  // 9. The final checkpoint: one directory per stage.
  if (steps_this_process > 0) {
    checkpoint();
  } else {
    log.info("the newest checkpoint is already at step " + std::to_string(state.step) +
             ": nothing to train");
  }
  log.info("done: " + std::to_string(state.step) + " steps");
  return 0;
}

}  // namespace fabkit::trainer
