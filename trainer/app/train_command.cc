// `fabtrain train`: the run set up as a story (launch, fabric, device and communicator, model,
// data), then the one loop (train_loop.h) over the step engine the flags choose.
#include <torch/torch.h>

#include <malloc.h>

#include <iostream>
#include <optional>

#include "common/errors.h"
#include "trainer/app/device_setup.h"
#include "trainer/app/error_exit.h"
#include "trainer/app/fabric_setup.h"
#include "trainer/app/nccl_transport.h"
#include "trainer/app/pipeline_engine.h"
#include "trainer/app/sharded_engine.h"
#include "trainer/app/train_log.h"
#include "trainer/app/train_loop.h"
#include "trainer/app/train_options.h"
#include "trainer/distributed/comm.h"
#include "trainer/distributed/launch_env.h"
#include "trainer/distributed/local_spawn.h"
#include "trainer/distributed/thread_plan.h"
#include "trainer/model/pretrained.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::trainer {
namespace {

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
  auto explained = [&nccl_log](const CommError& e) {
    const std::string why = explain_nccl_failure(nccl_log);
    return why.empty() ? std::string(e.what()) : std::string(e.what()) + "\n" + why;
  };
  // A group that failed for good: say why and leave from where it failed, before the stack
  // unwinds through the dead group's destructor (comm.h, set_dead_group_handler).
  set_dead_group_handler([&](const CommError& e) { exit_with_error(3, explained(e)); });
  struct Unset {
    ~Unset() { set_dead_group_handler(nullptr); }  // it holds a reference to nccl_log
  } unset;
  try {
    return run_train_with(o, argv, nccl_log);
  } catch (const CommError& e) {
    // A CommError of a group that is not dead (set-up, rendezvous): thrown up to main.
    throw CommError(explained(e));
  }
}

namespace {

int run_train_with(const TrainOptions& o, const std::vector<std::string>& argv,
                   NcclLogPlan& nccl_log) {
  // --dry-run: the pipeline schedule only; nothing is launched, loaded or written but the page.
  if (o.dry_run) {
    validate_pipeline_flags(o);
    return print_pipeline_dry_run(o);
  }
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
  co.store_prefix = join_store_attempt(co);  // torchrun's store outlives attempts (comm.h)
  if (co.store_hosted_by_agent) {
    log.info("torchrun's agent store: this attempt's keys under " + co.store_prefix +
             " (TORCHELASTIC_RESTART_COUNT=" + launch.restart_count + ")");
  }
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

  // 6. The step engine: sharded data parallel, or pipeline stages (--pp > 1); then the one loop.
  check_memory_options(o);
  const Json model_config = to_hf_json(loaded.config);
  EngineInputs in{
      launch, co, *comm, device, tensor_step, std::move(loaded), nccl_log, required_transport};
  std::unique_ptr<StepEngine> engine =
      o.pp > 1 ? make_pipeline_engine(o, in, log) : make_sharded_engine(o, in, log);
  return run_train_loop(o, *engine, {data, model_config, launch.local_rank}, log);
}

}  // namespace

}  // namespace fabkit::trainer
