// `fabtrain --nproc N`: start N local ranks of this same executable (posix_spawn of
// /proc/self/exe with torchrun's variables set), wait for all; when one fails, stop the others
// and name the rank. The children see FABTRAIN_LOCAL_SPAWN=1 and never spawn again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabkit::trainer {

struct SpawnResult {
  int exit_code = 0;        // 0 when every rank exited 0
  int failed_rank = -1;     // the first rank that failed
  std::string message;      // "rank 1 (pid 123) was killed by signal 9; stopped the other ranks"
};

// A free TCP port on 127.0.0.1 for the local store (bind to 0, read it back).
uint16_t pick_free_port();

// argv: the full command line of this process (re-used verbatim by the children).
// grace_ms: how long the survivors get after SIGTERM before SIGKILL.
SpawnResult spawn_local_ranks(const std::vector<std::string>& argv, int nproc, uint16_t master_port,
                              int grace_ms = 5000);

}  // namespace fabkit::trainer
