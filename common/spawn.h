// The one place fabkit starts a child process: posix_spawn with the child's descriptors mapped,
// optionally in a process group of its own; and the one write that a dead child cannot turn into
// our SIGPIPE. fabric/launch (agents behind ssh/srun) and fabric/nccl_runner (the NCCL child)
// wrap it with their own pipes and protocols.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace fabkit {

struct SpawnOptions {
  // (our descriptor, the child's descriptor number): dup2'd in the child, in order.
  std::vector<std::pair<int, int>> fds;
  bool search_path = false;        // posix_spawnp: argv[0] is looked up in PATH
  // A new process group (so the child and everything it starts stop together with kill(-pid)),
  // default signal dispositions and an empty signal mask, whatever this process set.
  bool own_process_group = false;
  const std::vector<std::string>* env = nullptr;  // nullptr: this process's environment
  // The file to execute when it is not argv[0] (e.g. "/proc/self/exe" to start this same
  // executable with the caller's argv[0] kept); empty: argv[0].
  std::string program;
};

// Starts argv (argv[0] = program unless options.program is set). Returns 0 and sets *pid, or
// posix_spawn's error number (the program is missing, not executable, ...); *pid is then -1.
int spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options, pid_t* pid);

// write(2) with SIGPIPE blocked for this thread, and one raised by this write consumed: a child
// that closed its stdin gives EPIPE (returned as -1 with errno set), never our death, and no
// process-wide handler changes. Writes at most once (callers loop for partial writes).
ssize_t write_without_sigpipe(int fd, const void* data, size_t size);

}  // namespace fabkit
