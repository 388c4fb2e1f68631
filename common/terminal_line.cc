#include "common/terminal_line.h"

#include <unistd.h>

#include <atomic>

namespace fabkit {
namespace {

// Lock-free on every platform we build for, so the handler's load is async-signal-safe.
std::atomic<int> g_drawn_fd{-1};
static_assert(std::atomic<int>::is_always_lock_free);

}  // namespace

void set_drawn_line_fd(int fd) { g_drawn_fd.store(fd); }

void erase_drawn_line_from_signal_handler() {
  const int fd = g_drawn_fd.exchange(-1);
  if (fd < 0) return;
  static const char kErase[] = "\r\033[K";
  ssize_t ignored = ::write(fd, kErase, sizeof kErase - 1);
  (void)ignored;  // nothing to do about a failed write in a handler that is about to re-raise
}

}  // namespace fabkit
