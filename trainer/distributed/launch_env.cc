#include "trainer/distributed/launch_env.h"

#include <cctype>

#include "common/errors.h"
#include "common/hostlist.h"

namespace fabkit::trainer {
namespace {

int int_var(const Environment& env, const std::string& name, int min_value) {
  auto v = env.get(name);
  if (!v) throw UsageError("environment variable " + name + " is missing");
  try {
    size_t used = 0;
    long x = std::stol(*v, &used);
    if (used != v->size() || x < min_value || x > 1000000) throw std::out_of_range("");
    return static_cast<int>(x);
  } catch (const std::logic_error&) {
    throw UsageError("environment variable " + name + "='" + *v + "' is not an integer >= " +
                     std::to_string(min_value));
  }
}

int int_var_or(const Environment& env, const std::string& name, int fallback) {
  return env.has(name) ? int_var(env, name, 0) : fallback;
}

void apply_port(LaunchEnv& le, const Environment& env, std::optional<uint16_t> default_port) {
  if (env.has("MASTER_PORT")) {
    int p = int_var(env, "MASTER_PORT", 1);
    if (p > 65535) throw UsageError("MASTER_PORT='" + *env.get("MASTER_PORT") + "' is not a TCP port");
    le.master_port = static_cast<uint16_t>(p);
    le.master_port_source = "MASTER_PORT";
  } else if (default_port) {
    le.master_port = *default_port;
    le.master_port_source = "profile";
  }
}

void check_rank(const LaunchEnv& le, const std::string& rank_var, const std::string& size_var) {
  if (le.world_size < 1 || le.rank >= le.world_size) {
    throw UsageError(rank_var + "=" + std::to_string(le.rank) + " is not below " + size_var + "=" +
                     std::to_string(le.world_size));
  }
  if (le.local_rank >= le.local_world_size) {
    throw UsageError("local rank " + std::to_string(le.local_rank) + " is not below the local world size " +
                     std::to_string(le.local_world_size) + " (" + le.launcher + " launch)");
  }
}

}  // namespace

int tasks_on_node(const std::string& spec, int node_index) {
  // Slurm's run-length form: "2(x3),1" = three nodes with 2 tasks, then one with 1.
  int node = 0;
  size_t i = 0;
  while (i < spec.size()) {
    size_t comma = spec.find(',', i);
    std::string item = spec.substr(i, comma == std::string::npos ? std::string::npos : comma - i);
    int count = 0, repeat = 1;
    size_t paren = item.find("(x");
    try {
      size_t used = 0;
      count = std::stoi(item.substr(0, paren), &used);
      if (used != (paren == std::string::npos ? item.size() : paren)) throw std::invalid_argument("");
      if (paren != std::string::npos) {
        if (item.back() != ')') throw std::invalid_argument("");
        repeat = std::stoi(item.substr(paren + 2, item.size() - paren - 3));
      }
    } catch (const std::logic_error&) {
      throw UsageError("SLURM tasks-per-node '" + spec + "': item '" + item +
                       "' is not N or N(xM)");
    }
    if (node_index < node + repeat) return count;
    node += repeat;
    if (comma == std::string::npos) break;
    i = comma + 1;
  }
  throw UsageError("SLURM tasks-per-node '" + spec + "' lists " + std::to_string(node) +
                   " nodes; this is node index " + std::to_string(node_index));
}

LaunchEnv detect_launch_env(const Environment& env, std::optional<uint16_t> default_port) {
  LaunchEnv le;
  if (env.has("RANK") && env.has("WORLD_SIZE")) {
    // torchrun, the DeepSpeed launcher and fabtrain --nproc all follow torchrun's contract.
    le.launcher = env.has("FABTRAIN_LOCAL_SPAWN") ? "fabtrain --nproc"
                  : env.has("TORCHELASTIC_RUN_ID") ? "torchrun" : "env";
    le.rank = int_var(env, "RANK", 0);
    le.world_size = int_var(env, "WORLD_SIZE", 1);
    le.local_rank = int_var_or(env, "LOCAL_RANK", le.rank);
    le.local_world_size = int_var_or(env, "LOCAL_WORLD_SIZE", le.world_size);
    if (auto a = env.get("MASTER_ADDR")) le.master_addr = *a;
    else if (le.world_size > 1) throw UsageError("RANK and WORLD_SIZE are set but MASTER_ADDR is not: set MASTER_ADDR to rank 0's address");
    auto agent = env.get("TORCHELASTIC_USE_AGENT_STORE");
    le.store_hosted_by_agent = agent && (*agent == "True" || *agent == "true" || *agent == "1");
    le.restart_count = env.get("TORCHELASTIC_RESTART_COUNT").value_or("");
    le.evidence = "RANK/WORLD_SIZE";
    check_rank(le, "RANK", "WORLD_SIZE");
  } else if (env.has("OMPI_COMM_WORLD_RANK") && env.has("OMPI_COMM_WORLD_SIZE")) {
    le.launcher = "mpirun";
    le.rank = int_var(env, "OMPI_COMM_WORLD_RANK", 0);
    le.world_size = int_var(env, "OMPI_COMM_WORLD_SIZE", 1);
    le.local_rank = int_var_or(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0);
    le.local_world_size = int_var_or(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1);
    // Open MPI does not say where rank 0 runs; the DeepSpeed/mpirun convention is -x MASTER_ADDR.
    if (auto a = env.get("MASTER_ADDR")) le.master_addr = *a;
    else if (le.world_size > 1) throw UsageError("launched by mpirun (OMPI_COMM_WORLD_RANK set) without MASTER_ADDR: pass -x MASTER_ADDR=<rank 0 host>");
    le.evidence = "OMPI_COMM_WORLD_*";
    check_rank(le, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  } else if (env.has("SLURM_PROCID") && (env.has("SLURM_STEP_NUM_TASKS") || env.has("SLURM_NTASKS"))) {
    // srun sets the SLURM_STEP_* values for its step; inside an sbatch script without srun only
    // the job-wide ones exist, and then this process is one task of a one-task step.
    le.launcher = "slurm";
    bool step = env.has("SLURM_STEP_NUM_TASKS");
    std::string ntasks_var = step ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
    std::string nodelist_var = env.has("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
    le.rank = int_var(env, "SLURM_PROCID", 0);
    le.world_size = int_var(env, ntasks_var, 1);
    le.local_rank = int_var_or(env, "SLURM_LOCALID", 0);
    std::string tpn_var = env.has("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
    if (auto tpn = env.get(tpn_var)) {
      le.local_world_size = tasks_on_node(*tpn, int_var_or(env, "SLURM_NODEID", 0));
    } else {
      le.local_world_size = le.world_size;
    }
    if (auto a = env.get("MASTER_ADDR")) {
      le.master_addr = *a;
    } else {
      auto list = env.get(nodelist_var);
      if (!list) throw UsageError("launched by srun (SLURM_PROCID set) without SLURM_JOB_NODELIST or MASTER_ADDR");
      le.master_addr = expand_hostlist(*list).front();
    }
    le.evidence = "SLURM_PROCID/" + ntasks_var + "/" + nodelist_var;
    check_rank(le, "SLURM_PROCID", ntasks_var);
  } else {
    le.evidence = "no launcher variables";
  }
  apply_port(le, env, default_port);
  return le;
}

void validate_degrees(int world_size, int data_parallel, int pipeline_parallel) {
  if (data_parallel < 1 || pipeline_parallel < 1) {
    throw UsageError("parallel degrees must be >= 1: data-parallel " + std::to_string(data_parallel) +
                     ", pipeline " + std::to_string(pipeline_parallel));
  }
  if (data_parallel * pipeline_parallel != world_size) {
    throw UsageError("data-parallel degree " + std::to_string(data_parallel) + " x pipeline degree " +
                     std::to_string(pipeline_parallel) + " = " +
                     std::to_string(data_parallel * pipeline_parallel) + " does not match the world size " +
                     std::to_string(world_size) + ": " +
                     (world_size % pipeline_parallel == 0
                          ? "set --dp " + std::to_string(world_size / pipeline_parallel) + " or "
                          : std::string()) +
                     "launch " + std::to_string(data_parallel * pipeline_parallel) + " ranks");
  }
}

}  // namespace fabkit::trainer
