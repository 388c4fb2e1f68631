#include "trainer/app/pipeline_engine.h"

#include <torch/torch.h>

#include <algorithm>

#include "common/errors.h"
#include "trainer/app/pipeline_checkpoint.h"
#include "trainer/data/sampler.h"
#include "trainer/model/weight_grad_store.h"
#include "trainer/parallel/pipeline_plan.h"
#include "trainer/parallel/pipeline_runner.h"
#include "trainer/parallel/pipeline_split.h"

namespace fabkit::trainer {
namespace {

// Per rank, gathered for the metrics of a log step (raw bytes: integers stay exact).
struct RankStats {
  int64_t bytes_sent;
  int64_t activation_bytes_peak;
  int64_t peak_in_flight;
  double recv_wait_ms;
  double compute_ms;
  double span_ms;
};

std::string join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

class PipelineEngine : public StepEngine {
 public:
  PipelineEngine(const TrainOptions& o, EngineInputs& in, TrainLog& log)
      : StepEngine(in.world, in.device, in.tensor_step,
                   in.world.rank() % (in.world.world_size() / o.pp), in.world.world_size() / o.pp,
                   o.micro_batches > 0 ? o.micro_batches : 4 * o.pp),
        stages_(o.pp),
        stage_(in.world.rank() / replicas_),
        kind_(parse_pipe_schedule(o.schedule)),
        shape_(pipeline_shape(o)),
        hidden_(in.loaded.config.hidden_size) {
    const LlamaConfig& cfg = in.loaded.config;
    if (cfg.tie_word_embeddings) {
      throw UsageError(o.model_dir +
                       " ties the head to the embedding (tie_word_embeddings true): with --pp " +
                       std::to_string(stages_) +
                       " the first and last stage would share one matrix, which fabtrain does not "
                       "split; use --pp 1 "
                       "(sharded data parallel) or a model with tie_word_embeddings false");
    }
    // The layer split over the virtual stages (one per rank, or V per rank interleaved), the
    // stage's communicator over its replicas, its sharded units.
    const int virtual_stages = shape_.virtual_stages();
    const StageParamCounts counts = count_stage_params(in.loaded.model);
    const std::vector<int> split =
        o.stage_layers.empty()
            ? balance_stage_layers(counts.layers, counts.embed, counts.head, virtual_stages)
            : parse_stage_layers(o.stage_layers, static_cast<int>(cfg.num_hidden_layers),
                                 virtual_stages);
    const std::vector<int> starts = stage_layer_starts(split);
    std::vector<int> members;
    for (int d = 0; d < replicas_; ++d) members.push_back(stage_ * replicas_ + d);
    stage_comm_ = make_group_comm(in.comm_options, members, "pp-stage-" + std::to_string(stage_));
    log.info("pipeline: " + std::to_string(stages_) + " stages x " + std::to_string(replicas_) +
             " data-parallel replicas, schedule " + to_string(kind_) +
             (shape_.chunks > 1
                  ? " with " + std::to_string(shape_.chunks) + " model chunks per rank (" +
                        std::to_string(virtual_stages) + " virtual stages)"
                  : std::string()) +
             ", " + std::to_string(micro_batches_) + " micro-batches of " +
             std::to_string(o.micro_batch_size) + " per replica; layers per " +
             (shape_.chunks > 1 ? "virtual stage " : "stage ") + join(split) +
             (o.stage_layers.empty()
                  ? " (balanced by parameters, embedding on the first, head on the last)"
                  : " (--stage-layers)") +
             "; bubble with equal costs " + std::to_string(bubble_fraction(kind_, shape_)));
    const torch::ScalarType compute_dtype = parse_dtype_name(o.torch_dtype);
    in.loaded.model->set_compute_dtype(compute_dtype);
    in.loaded.model->set_device(device_.device());
    // ZB-H1 splits each backward into B and W: the model's GEMMs leave their weight gradients to
    // the W pass (weight_grad_store.h). The other schedules keep ATen's own linear.
    set_split_weight_grads(kind_ == PipeSchedule::kZBH1);
    // This rank's chunks: virtual stages rank, rank + P, ... (chunk c = virtual stage c*P + rank),
    // their units and stages one after another in one sharded model.
    LlamaPlan plan;
    std::vector<size_t> chunk_first;
    for (int c = 0; c < shape_.chunks; ++c) {
      const int g = c * stages_ + stage_;
      LlamaPlan part = plan_llama_stage(in.loaded.model, mb_, starts[g], starts[g + 1], g == 0,
                                        g == virtual_stages - 1);
      const size_t offset = plan.units.size();
      chunk_first.push_back(plan.stages.size());
      units_.push_back({g, offset, part.units.size()});
      for (auto& st : part.stages) {
        st.unit += offset;
        plan.stages.push_back(std::move(st));
      }
      for (auto& u : part.units) plan.units.push_back(std::move(u));
    }
    model_ = std::make_unique<ShardedModel>(
        *stage_comm_, std::move(plan.units), std::move(plan.stages), false, compute_dtype,
        tensor_step_ ? std::optional<at::Device>(device_.device()) : std::nullopt);
    model_->set_chunks(chunk_first);
    model_->set_reduce_dtype(parse_dtype_name(o.reduce_dtype));
    world_.barrier();  // NCCL: a world collective has run, so its log names the network
    if (device_.cuda) check_nccl_transport(in.nccl_log, in.required_transport, world_, log);
    // Adafactor's row/column sums span the shards of one unit: the stage's replicas hold them.
    make_optimizer(o, *stage_comm_, log);
    log.info("rank 0 (stage 0) holds " + std::to_string(model_->shards().size()) +
             " units: params+grads+" + opt_->name() + " state " + std::to_string(state_bytes()) +
             " bytes; " + reduce_dtype_text(o.reduce_dtype, replicas_));
    runner_ = std::make_unique<PipelineRunner>(world_, *model_, stage_, replicas_, replica_, kind_,
                                               shape_, compute_dtype);
    log.info("stage " + std::to_string(stage_) + " holds at most " +
             std::to_string(peak_in_flight(runner_->actions())) +
             " micro-batch chunks' activations (" + to_string(kind_) + ")");
  }

  std::string step_batch_text(int64_t micro_batch_size) const override {
    return std::to_string(replicas_) + " replicas x " + std::to_string(micro_batches_) +
           " micro-batches x micro-batch " + std::to_string(micro_batch_size);
  }

  at::Tensor forward_backward(const std::vector<Batch>& micro, double loss_normalizer,
                              double loss_scale) override {
    model_->zero_grad();
    // Only the last stage's replicas return a share of the loss; the others 0.
    return runner_->run_step([&](int i) { load(micro[i], loss_normalizer); }, shapes(micro),
                             loss_scale);
  }

  // Replica r of every stage takes slice r of the validation set; the last stages' sums (loss,
  // target tokens) cross the world once (the other stages add zeros).
  double validation_loss(const std::vector<Example>& valid, const TrainOptions& o) override {
    std::vector<Batch> b;
    for (const auto& idx : epoch_batches(valid.size(), o.seed, 0, replica_, replicas_,
                                         static_cast<size_t>(o.micro_batch_size))) {
      b.push_back(make_batch(valid, idx));
    }
    double acc[2] = {0.0, 0.0};  // loss sum, target tokens
    acc[0] = runner_->run_forward_only(
        static_cast<int>(b.size()), [&](int i) { load(b[i], 1.0); }, shapes(b));
    if (stage_ == stages_ - 1) {
      for (const Batch& x : b) acc[1] += static_cast<double>(target_tokens(x.labels));
    } else {
      acc[0] = 0.0;
    }
    world_.allreduce_sum(acc, 2);
    return acc[1] > 0 ? acc[0] / acc[1] : 0.0;
  }

  // Per stage: the sum of its replicas' sends, the worst peaks and waits.
  void add_log_metrics(Json& m, double step_ms) override {
    const PipelineStepStats& ps = runner_->stats();
    RankStats mine{ps.bytes_sent,     ps.activation_bytes_peak,
                   ps.peak_in_flight, ps.recv_wait_ms,
                   ps.compute_ms,     ps.span_ms};
    std::vector<RankStats> all(static_cast<size_t>(world_.world_size()));
    world_.allgather_bytes(&mine, sizeof(mine), all.data());
    int64_t total_sent = 0;
    Json sent = Json::array(), act = Json::array(), held = Json::array(), wait = Json::array(),
         idle = Json::array();
    for (int s = 0; s < stages_; ++s) {
      int64_t s_sent = 0, s_act = 0, s_held = 0;
      double s_wait = 0, s_idle = 0;
      for (int d = 0; d < replicas_; ++d) {
        const RankStats& r = all[static_cast<size_t>(s * replicas_ + d)];
        s_sent += r.bytes_sent;
        s_act = std::max(s_act, r.activation_bytes_peak);
        s_held = std::max(s_held, r.peak_in_flight);
        s_wait = std::max(s_wait, r.recv_wait_ms);
        if (r.span_ms > 0) s_idle = std::max(s_idle, 1.0 - r.compute_ms / r.span_ms);
      }
      total_sent += s_sent;
      sent.push_back(s_sent);
      act.push_back(s_act);
      held.push_back(s_held);
      wait.push_back(s_wait / step_ms);
      idle.push_back(s_idle);
    }
    m["pp_schedule"] = to_string(kind_);
    m["pp_virtual_stages"] = shape_.virtual_stages();
    m["pp_bytes_sent"] = total_sent;
    m["pp_stage_bytes_sent"] = sent;
    m["bubble_fraction"] = bubble_fraction(kind_, shape_);
    // The bubble measured: per rank, the share of the pipeline's part of the step (first action
    // to last) in which it computed nothing (waiting in transfers, or for its turn).
    m["pp_stage_idle_fraction"] = idle;
    m["pp_stage_recv_wait_fraction"] = wait;
    m["pp_stage_peak_micro_batches"] = held;
    m["pp_stage_activation_bytes_peak"] = act;
  }

  // The schedule as --dry-run prints it, as a Markdown code block (the text dashboard's format).
  std::string run_summary_text() const override {
    return "```\n" + pipeline_schedule_report(kind_, shape_) + "```\n";
  }

  // Each stage from its own directory, all at one step.
  std::optional<TrainState> resume(const std::string& output_dir,
                                   std::vector<std::string>* warnings) override {
    return resume_pipeline(world_, *stage_comm_, output_dir, shape_.virtual_stages(), units_,
                           model_->shards(), *opt_, warnings);
  }
  std::string save(SaveRequest req, std::vector<std::string>* warnings) override {
    const std::string dir = save_pipeline_stages(*stage_comm_, req, shape_.virtual_stages(), units_,
                                                 model_->shards(), *opt_, warnings)
                                .string();
    // Every stage's checkpoint is complete before the run goes on (or ends); stages finish their
    // writes at different times, which counts against the pause timeout.
    world_.pause_barrier("the end of every stage's checkpoint");
    return dir + " (and the other stages' beside it)";
  }

 private:
  // The tensor between stages of micro-batch i: [B, T, hidden].
  std::function<std::vector<int64_t>(int)> shapes(const std::vector<Batch>& b) const {
    return [&b, h = hidden_](int i) {
      return std::vector<int64_t>{b[i].input_ids.size(0), b[i].input_ids.size(1), h};
    };
  }

  int stages_, stage_;
  PipeSchedule kind_;
  PipeShape shape_;
  int64_t hidden_;
  std::vector<StageUnits> units_;  // per model chunk: its virtual stage and units
  std::unique_ptr<Comm> stage_comm_;
  std::unique_ptr<PipelineRunner> runner_;
};

}  // namespace

PipeShape pipeline_shape(const TrainOptions& o) {
  PipeShape shape;
  shape.ranks = o.pp;
  shape.micro_batches = o.micro_batches > 0 ? o.micro_batches : 4 * o.pp;
  shape.chunks = o.virtual_stages > 0 ? o.virtual_stages
                 : parse_pipe_schedule(o.schedule) == PipeSchedule::kInterleaved1F1B ? 2
                                                                                     : 1;
  return shape;
}

void validate_pipeline_flags(const TrainOptions& o) {
  if (o.pp == 1) {
    if (o.micro_batches > 0) {
      throw UsageError("--micro-batches " + std::to_string(o.micro_batches) +
                       " splits a pipeline's batch, but --pp is 1: use --grad-accum " +
                       std::to_string(o.micro_batches) + " for the same global batch, or set --pp");
    }
    if (!o.stage_layers.empty())
      throw UsageError("--stage-layers " + o.stage_layers + " needs --pp > 1");
    if (o.virtual_stages > 1) {
      throw UsageError("--virtual-stages " + std::to_string(o.virtual_stages) +
                       " splits a pipeline rank's layers, but --pp is 1: set --pp");
    }
    if (o.dry_run) throw UsageError("--dry-run prints a pipeline schedule: give --pp > 1");
    if (o.resume) refuse_other_pipeline_degree(o.output_dir, 1);
    return;
  }
  const PipeSchedule kind = parse_pipe_schedule(o.schedule);
  if (o.micro_batches < 0 || o.micro_batches > (1 << 20)) {
    throw UsageError("--micro-batches " + std::to_string(o.micro_batches) +
                     " is out of range: give 1 to 1048576");
  }
  if (o.virtual_stages > 1 && kind != PipeSchedule::kInterleaved1F1B) {
    throw UsageError("--virtual-stages " + std::to_string(o.virtual_stages) + " needs --schedule " +
                     "interleaved-1f1b (" + o.schedule + " runs one model chunk per rank)");
  }
  if (!o.timeline_html.empty() && !o.dry_run)
    throw UsageError("--timeline-html " + o.timeline_html + " is written by --dry-run: add it");
  const PipeShape shape = pipeline_shape(o);
  check_pipe_shape(kind, shape);
  // Tags must stay below the backend's 2^30 (pipeline_schedule.h).
  if (!pipe_tags_fit(shape)) {
    throw UsageError("--micro-batches " + std::to_string(shape.micro_batches) + " x " +
                     std::to_string(shape.virtual_stages()) +
                     " virtual stages is too many transfers per step to tag: give fewer");
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
  if (o.fused_step)
    refuse("--fused-step", "drop it (the stages step after the pipeline's backward)");
  if (o.offload_activations)
    refuse("--offload-activations", "drop it (activation memory: use --schedule 1f1b)");
  if (o.resume && !o.dry_run) refuse_other_pipeline_degree(o.output_dir, shape.virtual_stages());
}

std::unique_ptr<StepEngine> make_pipeline_engine(const TrainOptions& o, EngineInputs& in,
                                                 TrainLog& log) {
  return std::make_unique<PipelineEngine>(o, in, log);
}

}  // namespace fabkit::trainer
