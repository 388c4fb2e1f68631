#include "slurm/controller_limits.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "common/fd_limit.h"

namespace fabkit::slurm {
namespace {

uint64_t read_count(const char* path) {
  std::ifstream in(path);
  uint64_t v = 0;
  return in >> v ? v : 0;
}

// /proc/loadavg's fourth field is "running/total" scheduling entities: every thread on the host.
uint64_t host_threads() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c, d;
  if (!(in >> a >> b >> c >> d)) return 0;
  const auto slash = d.find('/');
  return slash == std::string::npos ? 0 : std::stoull(d.substr(slash + 1));
}

}  // namespace

ControllerLimits gather_controller_limits() {
  ControllerLimits l;
  const FdLimit fd = raise_fd_soft_limit();
  l.fd_soft = fd.soft;
  l.fd_hard = fd.hard;
  l.fds_open = open_fd_count();
  // The kernel does not hold root to RLIMIT_NPROC (copy_process: INIT_USER is exempt); for
  // anyone else it counts every thread and process of the user, host-wide.
  rlimit r{};
  if (::getuid() != 0 && ::getrlimit(RLIMIT_NPROC, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
    l.nproc_soft = static_cast<uint64_t>(r.rlim_cur);
  l.threads_max = read_count("/proc/sys/kernel/threads-max");
  l.pid_max = read_count("/proc/sys/kernel/pid_max");
  try {
    l.tasks_now = host_threads();
  } catch (const std::exception&) {
    l.tasks_now = 0;  // unreadable: the reserve stands for it
  }
  return l;
}

}  // namespace fabkit::slurm
