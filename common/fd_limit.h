// RLIMIT_NOFILE for a process that holds many descriptors at once (the cluster controller: three
// per live agent, docs/cluster.md "The controller at scale"). The soft limit is often 1024 while
// the hard one is far higher (systemd's default hard limit is 524288): up to the hard limit is
// the process's own to take, without privilege.
#pragma once

#include <cstdint>

namespace fabkit {

struct FdLimit {
  uint64_t soft = 0, hard = 0;  // after the raise; UINT64_MAX = unlimited
  uint64_t soft_before = 0;     // the soft limit this process started with
};

// Raises the soft limit to the hard one (best effort: a failing setrlimit leaves it as it was)
// and returns both. Children inherit the raised limit.
FdLimit raise_fd_soft_limit();

// Descriptors this process has open now (/proc/self/fd), or 0 when it cannot be read.
uint64_t open_fd_count();

}  // namespace fabkit
