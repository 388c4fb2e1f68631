// Who started this process and where its peers are: torchrun (incl. its agent-hosted store),
// srun, mpirun / the DeepSpeed launcher, fabtrain's own --nproc, or nothing (one process).
// Pure: reads an Environment snapshot, so every launcher is testable with a map.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/environment.h"

namespace fabkit::trainer {

struct LaunchEnv {
  std::string launcher = "single";  // "torchrun", "env" (RANK/WORLD_SIZE), "slurm", "mpirun", "fabtrain --nproc", "single"
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  uint16_t master_port = 29500;
  std::string master_port_source = "default";  // "MASTER_PORT", "profile", "default"
  bool store_hosted_by_agent = false;           // TORCHELASTIC_USE_AGENT_STORE=True
  // TORCHELASTIC_RESTART_COUNT as given (for the log only: each agent counts its own restarts,
  // so ranks may disagree; join_store_attempt() in comm.h separates the attempts instead).
  std::string restart_count;
  std::string evidence;                         // the variables that decided, for the log
};

// default_port: the profile's rendezvous port when one exists. Throws UsageError naming the
// variable and its value when the environment is inconsistent (rank >= world size, a nodelist
// that does not parse, mpirun without MASTER_ADDR ...).
LaunchEnv detect_launch_env(const Environment& env, std::optional<uint16_t> default_port);

// "2(x3),1" -> tasks on node `node_index`. Throws UsageError on a malformed value.
int tasks_on_node(const std::string& tasks_per_node, int node_index);

// Parallel degrees must multiply to the world size; the message carries all the numbers.
void validate_degrees(int world_size, int data_parallel, int pipeline_parallel);

}  // namespace fabkit::trainer
