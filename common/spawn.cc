#include "common/spawn.h"

#include <pthread.h>
#include <signal.h>
#include <spawn.h>

#include <cerrno>
#include <ctime>

#include <unistd.h>

extern char** environ;

namespace fabkit {

int spawn_process(const std::vector<std::string>& argv, const SpawnOptions& o, pid_t* pid) {
  *pid = -1;
  if (argv.empty()) return EINVAL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (const auto& [ours, theirs] : o.fds) posix_spawn_file_actions_adddup2(&fa, ours, theirs);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (o.own_process_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  if (o.env) {
    for (const auto& e : *o.env) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);
  }
  char** envp = o.env ? cenv.data() : environ;
  pid_t child = -1;
  const char* program = o.program.empty() ? cargv[0] : o.program.c_str();
  const int rc = o.search_path ? ::posix_spawnp(&child, program, &fa, &attr, cargv.data(), envp)
                               : ::posix_spawn(&child, program, &fa, &attr, cargv.data(), envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc == 0) *pid = child;  // unspecified after a failed spawn: nothing to kill or reap
  return rc;
}

ssize_t write_without_sigpipe(int fd, const void* data, size_t size) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  const ssize_t n = ::write(fd, data, size);
  const int write_errno = errno;
  if (n < 0 && write_errno == EPIPE) {
    timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = write_errno;
  return n;
}

}  // namespace fabkit
