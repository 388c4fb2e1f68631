#include "common/fd_limit.h"

#include <dirent.h>
#include <sys/resource.h>

#include <cstdint>

namespace fabkit {
namespace {

uint64_t as_count(rlim_t v) { return v == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(v); }

}  // namespace

FdLimit raise_fd_soft_limit() {
  FdLimit out;
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return out;
  out.soft_before = as_count(r.rlim_cur);
  if (r.rlim_cur != r.rlim_max) {
    rlimit want = r;
    want.rlim_cur = r.rlim_max;
    // RLIM_INFINITY as the hard limit cannot be the soft one above fs.nr_open (EPERM): then the
    // soft limit stays, and the budget is computed from it.
    if (::setrlimit(RLIMIT_NOFILE, &want) == 0) r = want;
  }
  out.soft = as_count(r.rlim_cur);
  out.hard = as_count(r.rlim_max);
  return out;
}

uint64_t open_fd_count() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  uint64_t n = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n > 0 ? n - 1 : 0;  // the directory's own descriptor
}

}  // namespace fabkit
