// The loop as a story: the step count, precision, resume, control; then per step the
// micro-batches, the engine's forward and backward, the shared loss scale, clip and step, the log,
// evaluation, checkpoints and the action every rank agreed on.
#include "trainer/app/train_loop.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include "common/errors.h"
#include "trainer/app/run_monitor.h"
#include "trainer/control/agree.h"
#include "trainer/data/sampler.h"
#include "trainer/data/token_counts.h"
#include "trainer/distributed/collective_phase.h"
#include "trainer/optim/loss_scale.h"
#include "trainer/optim/schedule.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// One step under the Kineto profiler (what torch.profiler runs): the CPU ops always and, when the
// step runs on a GPU, the CUDA activities (kernels, copies, with their device times), so the
// trace shows where the GPU's time went, not only what the host queued. The destructor waits for
// the device (the step's kernels end inside the trace) and writes the Chrome trace.
// A trace is a diagnostic: its failure never ends the run, but it is said (a warning naming the
// step), and so is a GPU step's trace without GPU activity: CUPTI, which Kineto asks for the
// kernels, can be refused (profiling restricted to admins, a container without the permission)
// and then the file holds host ops only, which would read as "the GPU did nothing".
class StepTrace {
 public:
  StepTrace(std::string path, int64_t step, const TrainDevice& device, const TrainLog& log)
      : path_(std::move(path)), step_(step), device_(device), log_(log) {
    namespace prof = torch::profiler::impl;
    std::set<prof::ActivityType> activities{prof::ActivityType::CPU};
    if (device_.cuda) activities.insert(prof::ActivityType::CUDA);
    const prof::ProfilerConfig config(prof::ProfilerState::KINETO, /*report_input_shapes=*/true);
    try {
      torch::autograd::profiler::prepareProfiler(config, activities);
      torch::autograd::profiler::enableProfiler(config, activities);
      active_ = true;
    } catch (const std::exception& e) {
      warn(std::string("the profiler did not start: ") + e.what());
    }
  }
  ~StepTrace() {
    if (!active_) return;
    try {
      if (device_.cuda) torch::cuda::synchronize(device_.index);
      auto result = torch::autograd::profiler::disableProfiler();
      if (device_.cuda) {
        size_t on_gpu = 0;
        for (const auto& e : result->events()) on_gpu += e.deviceType() == c10::DeviceType::CUDA;
        if (on_gpu == 0) {
          warn("the trace holds no GPU kernel or copy: the CUDA profiler (CUPTI) recorded nothing "
               "(profiling restricted to admin users, NVreg_RestrictProfilingToAdminUsers=1, or a "
               "container without the permission); it shows host ops only");
        }
      }
      result->save(path_);
    } catch (const std::exception& e) {
      warn(std::string("the trace was not written: ") + e.what());
    }
  }
  StepTrace(const StepTrace&) = delete;
  StepTrace& operator=(const StepTrace&) = delete;

 private:
  void warn(const std::string& why) const noexcept {
    try {
      log_.warn("--trace-steps: step " + std::to_string(step_) + ": " + why);
    } catch (...) {  // a destructor's warning must not throw
    }
  }

  std::string path_;
  int64_t step_;
  TrainDevice device_;
  const TrainLog& log_;
  bool active_ = false;
};

// --trace-steps: a few steps after two warm-up steps, one Chrome trace per rank and step
// (chrome://tracing, Perfetto).
std::unique_ptr<StepTrace> trace_step(const TrainOptions& o, int64_t steps_this_process, int rank,
                                      int64_t step, const TrainDevice& device, const TrainLog& log) {
  if (o.trace_steps <= 0 || steps_this_process < 2 || steps_this_process >= 2 + o.trace_steps)
    return nullptr;
  const fs::path dir = fs::path(o.output_dir) / "trace";
  fs::create_directories(dir);
  return std::make_unique<StepTrace>(
      (dir / ("rank-" + std::to_string(rank) + "-step-" + std::to_string(step) + ".json")).string(), step,
      device, log);
}

// The data position in this run's units after a resume: examples of the epoch's order already
// consumed, over this run's examples per micro-batch index (all replicas). Equal for an unchanged
// job; after a change of replicas or micro-batch size a partial batch is replayed, never skipped.
void place_after_resume(TrainState& state, int64_t per_batch, TrainLog& log) {
  if (state.examples_in_epoch < 0) return;
  state.batch_in_epoch = state.examples_in_epoch / per_batch;
  if (const int64_t replay = state.examples_in_epoch % per_batch; replay != 0) {
    log.warn(
        std::to_string(replay) + " examples before the checkpoint are seen again: its position (" +
        std::to_string(state.examples_in_epoch) + " examples) is not a multiple of this run's " +
        std::to_string(per_batch) + " examples per micro-batch");
  }
}

// The step's token counts are computed by every rank from the whole dataset (token_counts.h),
// which holds only if every rank loaded the same examples: a --data path that names a different
// file per node, or a tokenizer that differs, would make the ranks divide their losses by different
// counts without any error. One collective per run says so instead.
void check_same_data_everywhere(Comm& world, const std::string& data_path,
                                const std::vector<TokenCounts>& per_example) {
  const uint64_t mine = token_counts_fingerprint(per_example);
  std::vector<uint64_t> all(static_cast<size_t>(world.world_size()));
  world.allgather_bytes(&mine, sizeof mine, all.data());
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    throw UsageError(data_path + ": rank " + std::to_string(r) +
                     " loaded other training examples than rank 0 (their token counts differ); " +
                     "every rank must read the same file with the same tokenizer and options: " +
                     "put it on a shared filesystem or copy the same file to every node");
  }
}

}  // namespace

int run_train_loop(const TrainOptions& o, StepEngine& engine, const LoopInputs& in, TrainLog& log) {
  Comm& world = engine.world();
  const std::vector<Example>& train = in.data.train;
  const int64_t micro = engine.micro_batches_per_step();
  const int64_t per_batch =
      o.micro_batch_size * engine.replicas();  // examples per micro-batch index
  // 1. Steps: each replica's slice of the epoch, `micro` micro-batches a step.
  const int64_t steps_per_epoch =
      static_cast<int64_t>(epoch_batches(train.size(), o.seed, 0, engine.replica(),
                                         engine.replicas(), o.micro_batch_size)
                               .size()) /
      micro;
  if (steps_per_epoch == 0) {
    throw UsageError(o.data + ": " + std::to_string(train.size()) + " examples of " +
                     std::to_string(o.max_length) + " tokens are too few for one step of " +
                     engine.step_batch_text(o.micro_batch_size));
  }
  const int64_t total_steps = o.max_steps > 0 ? o.max_steps : o.num_epochs * steps_per_epoch;
  // The step's token counts over every replica, without a collective per step (token_counts.h).
  const std::vector<TokenCounts> example_counts = example_token_counts(train);
  check_same_data_everywhere(world, o.data, example_counts);
  log.info("data " + o.data + ": " + std::to_string(train.size()) + " train / " +
           std::to_string(in.data.valid.size()) + " valid examples, " +
           std::to_string(steps_per_epoch) + " steps per epoch, " + std::to_string(total_steps) +
           " steps");

  // 2. Precision and schedule. fp16: the dynamic loss scale starts the backward (loss_scale.h).
  std::optional<DynamicLossScale> scaler;
  if (parse_dtype_name(o.torch_dtype) == torch::kFloat16) {
    scaler = DynamicLossScale{o.initial_loss_scale, 0, o.loss_scale_window};
  }
  log.info("precision: compute " + o.torch_dtype +
           "; master weights and optimizer state float32; gradient reduction " + o.reduce_dtype +
           (scaler ? "; dynamic loss scale from " + std::to_string(o.initial_loss_scale) +
                         ", doubled after " + std::to_string(o.loss_scale_window) + " finite steps"
                   : std::string()));
  const CosineSchedule schedule{o.lr, o.warmup_steps, total_steps, o.min_lr_ratio};
  const int64_t state_bytes = engine.state_bytes();

  // 3. Resume from the newest complete checkpoint (the engine knows where its checkpoints live).
  fs::create_directories(o.output_dir);
  TrainState state;
  state.seed = o.seed;
  if (o.resume) {
    std::vector<std::string> warnings;
    if (auto resumed = engine.resume(o.output_dir, &warnings)) {
      state = *resumed;
      engine.model().sync_params_from_host();
      log.info("resumed from step " + std::to_string(state.step) + " (epoch " +
               std::to_string(state.epoch) + ")");
      if (scaler && state.loss_scale > 0) {
        scaler->scale = state.loss_scale;
        scaler->good_steps = state.loss_scale_good_steps;
      }
      place_after_resume(state, per_batch, log);
    }
    for (const auto& w : warnings) log.warn(w);
  }
  log.open_metrics(fs::path(o.output_dir) / "metrics.jsonl");

  // 4. Monitoring and control (run_monitor.h), and the one way to save: the monitor says so first.
  RunMonitor monitor(o.output_dir, o.no_control, world.rank(), in.local_rank,
                     Environment::from_process(), log);
  if (const std::string summary = engine.run_summary_text(); !summary.empty())
    monitor.text(state.step, trainer::monitor::kTagPipelineSchedule, summary);
  // The model directory is recorded absolute: export copies its tokenizer files from another
  // working directory, and never resolves a recorded path against its own.
  // A run without --model has none to record (fs::absolute("") throws).
  const std::string model_dir =
      o.model_dir.empty() ? std::string() : fs::absolute(o.model_dir).string();
  const SaveRequest save_base{o.output_dir,        state,        in.model_config, model_dir,
                              o.save_total_limit,  o.save_on_each_node, in.local_rank};
  int64_t saved_at = -1;
  auto save_now = [&] {
    if (saved_at == state.step) return;
    monitor.saving(state.step, total_steps);
    SaveRequest req = save_base;
    req.state = state;
    engine.model().sync_params_to_host();
    std::vector<std::string> warnings;
    log.info("checkpoint " + engine.save(std::move(req), &warnings));
    for (const auto& w : warnings) log.info(w);
    saved_at = state.step;
  };

  // 5. The loop: micro-batches, forward and backward, loss scale, clip, step, log, eval, save,
  // control.
  ControlAgreement agreement(/*defer=*/engine.device().cuda);
  int64_t steps_this_process = 0;
  // The figures of the newest step that read them (log steps): between log steps the control
  // status shows these.
  double loss = std::nan(""), grad_norm = std::nan("");
  // The timed interval (step_time_ms, tokens_per_s): the steps since the last log step, from a
  // point where the device had finished everything queued before it to a log step whose queued
  // device work is finished too. On a GPU the host returns from a step long before the device has
  // run it (the backward of the first layers, the clip and the optimizer are still queued), so a
  // host-only clock would count the host's enqueueing, not the step; a device wait at each end
  // counts every step's work exactly once. Between log steps nothing waits (no sync per step).
  std::optional<Clock::time_point> interval_start;
  int64_t interval_steps = 0;
  double interval_tokens = 0;
  double step_ms = std::nan(""), tokens_per_s = 0;
  std::vector<std::vector<size_t>> batches;
  std::vector<TokenCounts> batch_counts;  // per micro-batch index, over every replica
  int64_t batches_epoch = -1;
  CollectivePhaseScope phase;
  while (state.step < total_steps) {
    if (batches_epoch != state.epoch) {
      batches = epoch_batches(train.size(), o.seed, state.epoch, engine.replica(),
                              engine.replicas(), o.micro_batch_size);
      batch_counts = epoch_batch_token_counts(example_counts, o.seed, state.epoch,
                                              engine.replicas(), o.micro_batch_size);
      batches_epoch = state.epoch;
    }
    if (state.batch_in_epoch + micro > static_cast<int64_t>(batches.size())) {
      ++state.epoch;
      state.batch_in_epoch = 0;
      state.examples_in_epoch = 0;
      continue;
    }
    const std::unique_ptr<StepTrace> trace =
        trace_step(o, steps_this_process, world.rank(), state.step + 1, engine.device(), log);
    if (!interval_start) {
      // After a log step, evaluation or save the device is idle (they ended in a device wait), so
      // this costs nothing there; it keeps their time out of the next interval.
      engine.wait_for_device();
      interval_start = Clock::now();
    }
    std::vector<Batch> step_batches;
    TokenCounts counts;  // the global batch's: every replica's micro-batches of this step
    for (int64_t a = 0; a < micro; ++a) {
      step_batches.push_back(make_batch(train, batches[state.batch_in_epoch + a]));
      counts += batch_counts[state.batch_in_epoch + a];
    }
    // A collective of this step that times out is named with it ("allgather of step 12").
    phase.set("step " + std::to_string(state.step + 1));
    const double lr = schedule.lr_at(state.step);
    engine.begin_step(lr);
    const double scale_used = scaler ? scaler->scale : 1.0;
    const at::Tensor local_loss =
        engine.forward_backward(step_batches, std::max<double>(1.0, counts.target), scale_used);
    bool apply = true;
    if (scaler) {
      apply = scaler->update(engine.grads_finite_everywhere());
      if (apply) {
        engine.unscale_grads(scale_used);
      } else {
        log.warn("step " + std::to_string(state.step + 1) +
                 ": non-finite gradients at loss scale " + std::to_string(scale_used) +
                 ": update skipped, loss scale now " + std::to_string(scaler->scale));
      }
      state.loss_scale = scaler->scale;
      state.loss_scale_good_steps = scaler->good_steps;
    }
    // The world's loss and gradient norm, and the control votes, in one collective, left on the
    // device (no host sync). The votes: what this rank's signals and socket asked for by now.
    const control::Votes votes = control::vote_for(monitor.requested());
    StepSums sums = engine.finish_step(local_loss, apply, o.max_grad_norm, lr,
                                       std::vector<double>(votes.begin(), votes.end()));
    engine.end_step();
    state.batch_in_epoch += micro;
    state.examples_in_epoch = state.batch_in_epoch * per_batch;
    ++state.step;
    ++steps_this_process;
    ++interval_steps;
    interval_tokens += static_cast<double>(counts.real);
    const TrainDevice& device = engine.device();
    const int64_t peak_memory = device.cuda ? cuda_peak_allocated_bytes(device) : max_rss_bytes();
    // The one read of the step's figures (a host sync on a GPU), on log steps only: TensorBoard
    // and metrics.jsonl get them there; --log-every 1 (the default) reads every step.
    const bool log_step = state.step % o.log_every == 0 || state.step == total_steps;
    const bool fresh = log_step;
    if (log_step) {
      // First the wait with the collective deadline (a missing rank is named there), then the
      // device wait that ends the interval: every kernel its steps queued has run.
      sums.landed->wait();
      engine.wait_for_device();
      const double interval_ms =
          std::chrono::duration<double, std::milli>(Clock::now() - *interval_start).count();
      step_ms = interval_ms / static_cast<double>(interval_steps);
      tokens_per_s = interval_tokens / (interval_ms / 1000.0);
      interval_start.reset();
      interval_steps = 0;
      interval_tokens = 0;
      const at::Tensor host = sums.figures.to(at::kCPU);
      loss = host.data_ptr<double>()[0];
      grad_norm = host.data_ptr<double>()[1];
      Json m = {{"step", state.step},
                {"total_steps", total_steps},
                {"epoch", state.epoch},
                {"loss", loss},
                {"lr", lr},
                {"grad_norm", grad_norm},
                {"tokens", static_cast<double>(counts.real)},
                {"tokens_per_s", tokens_per_s},
                {"step_time_ms", step_ms},
                {"state_bytes_per_rank", state_bytes},
                {"max_rss_bytes", max_rss_bytes()}};
      if (device.cuda) m["gpu_peak_bytes"] = cuda_peak_allocated_bytes(device);
      engine.add_log_metrics(m, step_ms);
      if (scaler) {
        m["loss_scale"] = scale_used;
        m["update_skipped"] = !apply;
      }
      log.step(m);
    }
    if (o.eval_every > 0 && !in.data.valid.empty() &&
        (state.step % o.eval_every == 0 || state.step == total_steps)) {
      const double v = engine.validation_loss(in.data.valid, o);
      log.eval({{"step", state.step}, {"valid_loss", v}, {"valid_perplexity", std::exp(v)}});
      monitor.after_eval(state.step, v);
    }
    if (o.save_every > 0 && state.step % o.save_every == 0 && state.step < total_steps) save_now();
    monitor.after_step(
        {state.step, total_steps, loss, lr, tokens_per_s, grad_norm, peak_memory, fresh});
    // Every rank acts on the same step: what any rank's signals or node's socket asked for
    // (read one step late between log steps on a GPU: ControlAgreement).
    const control::Action action =
        agreement.after_step(sums.extra, std::move(sums.landed), log_step);
    if (action == control::Action::kSave) {
      log.info("save requested: checkpoint at step " + std::to_string(state.step));
      save_now();
    } else if (action == control::Action::kStop) {
      log.info("stop requested" + monitor.signal_note() + ": checkpoint at step " +
               std::to_string(state.step) + ", then exit");
      save_now();
      world.barrier();
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

  // 6. The final checkpoint (export it with `fabtrain export`).
  if (steps_this_process > 0) {
    save_now();
  } else {
    log.info("the newest checkpoint is already at step " + std::to_string(state.step) +
             ": nothing to train");
  }
  log.info("done: " + std::to_string(state.step) + " steps");
  return 0;
}

}  // namespace fabkit::trainer
