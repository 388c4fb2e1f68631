#include "trainer/app/train_options.h"

namespace fabkit::trainer {

namespace {

// --reduce-dtype: the short names (fp32, bf16) and --torch-dtype's long ones, stored as the
// long one (a transform: CLI11's check() would hand the validator a copy); float16 is refused with
// the reason, not just "not in the set".
std::string check_reduce_dtype(std::string& v) {
  if (v == "fp32" || v == "float32") {
    v = "float32";
    return "";
  }
  if (v == "bf16" || v == "bfloat16") {
    v = "bfloat16";
    return "";
  }
  if (v == "fp16" || v == "float16" || v == "half") {
    return v +
           " is not supported: an fp16 sum over W ranks overflows at 65504, W times sooner than "
           "one rank's loss-scaled gradient, and fabtrain's loss scale is not sized for that -- "
           "use bf16 (the same 2 bytes a value, float32's range) or fp32";
  }
  return "'" + v + "' is not a reduce dtype -- use fp32 (the default) or bf16";
}

}  // namespace

void bind_train_options(CLI::App& c, TrainOptions& o) {
  c.add_option("--profile", o.profile, "cluster.json from `fabcheck profile`: env to apply + node check")->check(CLI::ExistingFile);
  c.add_flag("--skip-validate", o.skip_validate, "start even when this node disagrees with the profile (logged)");
  c.add_option("--nproc", o.nproc, "start N local ranks (fork/exec of this program)")->check(CLI::Range(1, 1024));
  c.add_option("--threads", o.threads, "ATen intra-op threads per rank (default: planned from the cores and the BLAS)")
      ->check(CLI::Range(1, 1024));
  c.add_option("--blas-threads", o.blas_threads, "OpenBLAS threads per rank (default: the rank's cores)")
      ->check(CLI::Range(1, 1024));
  c.add_option("--dp", o.dp, "data-parallel degree (default: world size)");
  c.add_option("--pp", o.pp, "pipeline stages: the decoder layers split over S ranks (world = dp x pp)");
  c.add_option(
      "--schedule", o.schedule,
      "pipeline schedule: gpipe, 1f1b (fewer activations held), interleaved-1f1b (smaller bubble, "
      "more activations; --virtual-stages) or zb-h1 (split backward: about a third of 1f1b's "
      "bubble, 1f1b's activations)");
  c.add_option("--virtual-stages", o.virtual_stages,
               "interleaved-1f1b: model chunks per pipeline rank (default 2; --micro-batches a "
               "multiple of --pp)")
      ->check(CLI::Range(1, 64));
  c.add_flag("--dry-run", o.dry_run,
             "print the pipeline schedule as a timeline (unit-cost simulation, bubble, activations "
             "held) and exit");
  c.add_option("--timeline-html", o.timeline_html,
               "with --dry-run: also write the timeline as an HTML page to FILE");
  c.add_option("--micro-batches", o.micro_batches,
               "pipeline: micro-batches of --micro-batch-size per replica per step (default 4 x --pp)");
  c.add_option("--stage-layers", o.stage_layers,
               "pipeline: decoder layers per stage, e.g. 10,11,11 (default: balanced by parameter count)");
  c.add_option("--device", o.device,
               "auto: a GPU when this LibTorch sees one (chosen from the profile's GPU<->NIC locality), else CPU")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  c.add_option("--step-impl", o.step_impl,
               "optimizer step, clipping and loss-scale checks: host loops (CPU default) or tensor ops (GPU; on "
               "CPU it runs the GPU path's code)")
      ->check(CLI::IsMember({"auto", "host", "tensor"}));
  c.add_option("--require-transport", o.require_transport,
               "GPU runs: stop before training unless NCCL's own log says it used this network (IB, RoCE, Socket)");
  c.add_option("--rendezvous-timeout-ms", o.rendezvous_timeout_ms)->check(CLI::Range(100, 3600000));
  c.add_option("--collective-timeout-ms", o.collective_timeout_ms)->check(CLI::Range(100, 3600000));
  c.add_option("--model", o.model_dir, "HF model directory (config.json [+ safetensors])")->required()->check(CLI::ExistingDirectory);
  c.add_option("--data", o.data, "training JSONL")->required()->check(CLI::ExistingFile);
  c.add_option("--valid-data", o.valid_data, "validation JSONL")->check(CLI::ExistingFile);
  c.add_option("--valid-split", o.valid_split, "fraction of --data held out for validation")->check(CLI::Range(0.0, 0.9));
  c.add_option("--output", o.output_dir, "checkpoints, metrics.jsonl");
  c.add_option("--format", o.format, "auto|text|input_ids|chat");
  c.add_option("--text-column", o.text_column);
  c.add_option("--chat-template", o.chat_template);
  c.add_option("--max-length", o.max_length)->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  c.add_flag("--no-packing", o.no_packing, "one padded example per record instead of packed blocks");
  c.add_flag("--skip-bad-lines", o.skip_bad_lines);
  c.add_option("--seed", o.seed);
  c.add_option("--max-steps", o.max_steps)->check(CLI::NonNegativeNumber);
  c.add_option("--num-epochs", o.num_epochs)->check(CLI::PositiveNumber);
  c.add_option("--micro-batch-size", o.micro_batch_size, "sequences per rank per micro-step")->check(CLI::PositiveNumber);
  c.add_option("--grad-accum", o.grad_accum)->check(CLI::PositiveNumber);
  c.add_flag("--recompute", o.recompute, "activation checkpointing per decoder layer");
  c.add_flag("--offload-activations", o.offload_activations,
             "with --recompute: each layer's checkpointed input waits in host memory (pinned) during the forward "
             "and returns to the GPU one layer ahead of its backward");
  c.add_flag("--fused-step", o.fused_step,
             "apply the optimizer to each unit in the backward as soon as its gradient is reduced and keep no "
             "gradient shards (needs --max-grad-norm 0, --grad-accum 1, no float16)");
  c.add_option("--torch-dtype", o.torch_dtype,
               "compute precision of parameters and activations; master weights and optimizer "
               "state stay float32")
      ->check(CLI::IsMember({"float32", "bfloat16", "float16"}));
  c.add_option("--reduce-dtype", o.reduce_dtype,
               "dtype the gradients are reduce-scattered in: fp32 (default) or bf16 (half the "
               "bytes; the sum still lands in the float32 shard)")
      ->transform(CLI::Validator(check_reduce_dtype, "fp32|bf16", "reduce dtype"));
  c.add_option("--initial-loss-scale", o.initial_loss_scale, "float16: the first dynamic loss scale")
      ->check(CLI::PositiveNumber);
  c.add_option("--loss-scale-window", o.loss_scale_window,
               "float16: finite steps in a row before the loss scale doubles")
      ->check(CLI::PositiveNumber);
  c.add_option("--eval-every", o.eval_every)->check(CLI::NonNegativeNumber);
  c.add_option("--log-every", o.log_every)->check(CLI::PositiveNumber);
  c.add_option("--trace-steps", o.trace_steps,
               "write ATen op traces (Chrome format) of N steps, after 2 warm-up steps, to OUTPUT/trace/")
      ->check(CLI::Range(int64_t{0}, int64_t{100}));
  c.add_option("--optimizer", o.optimizer)->check(CLI::IsMember({"adamw", "adafactor"}));
  c.add_option("--lr", o.lr)->check(CLI::PositiveNumber);
  c.add_option("--warmup-steps", o.warmup_steps)->check(CLI::NonNegativeNumber);
  c.add_option("--min-lr-ratio", o.min_lr_ratio)->check(CLI::Range(0.0, 1.0));
  c.add_option("--weight-decay", o.weight_decay)->check(CLI::NonNegativeNumber);
  c.add_option("--beta1", o.beta1)->check(CLI::Range(0.0, 1.0));
  c.add_option("--beta2", o.beta2)->check(CLI::Range(0.0, 1.0));
  c.add_option("--eps", o.eps)->check(CLI::PositiveNumber);
  c.add_option("--max-grad-norm", o.max_grad_norm, "0: no clipping")->check(CLI::NonNegativeNumber);
  c.add_option("--save-every", o.save_every)->check(CLI::NonNegativeNumber);
  c.add_option("--save-total-limit", o.save_total_limit)->check(CLI::NonNegativeNumber);
  c.add_flag("--save-on-each-node", o.save_on_each_node,
             "OUTPUT is a node-local disk: every node keeps the manifest and its own ranks' shards, and "
             "resumes from them (default: OUTPUT is shared and rank 0 writes the manifest)");
  c.add_flag("--resume,!--no-resume", o.resume, "continue from the newest complete checkpoint (default on)");
  c.add_option("--exit-after-steps", o.exit_after_steps,
               "stop after N steps of this process without a final checkpoint (preemption drill)")
      ->check(CLI::NonNegativeNumber);
  c.add_flag("--no-control", o.no_control,
             "serve no control socket (`fabtrain control status|save|stop|abort JOB`; JOB is OUTPUT's name)");
}

std::string reduce_dtype_text(const std::string& reduce_dtype, int replicas) {
  if (replicas <= 1)
    return "one replica: no gradient reduction (--reduce-dtype " + reduce_dtype + " unused)";
  return "gradients reduce-scattered in " + reduce_dtype + " over " + std::to_string(replicas) +
         " replicas (--reduce-dtype), summed into the float32 shards";
}

}  // namespace fabkit::trainer
