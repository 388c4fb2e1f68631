#include "common/terminal_line.h"

#include <time.h>
#include <unistd.h>

#include <atomic>

namespace fabkit {
namespace {

// Lock-free on every platform we build for, so the handler's load is async-signal-safe.
std::atomic<int> g_drawn_fd{-1};
std::atomic<int> g_drawing{0};
std::atomic<bool> g_stopping{false};
static_assert(std::atomic<int>::is_always_lock_free);
static_assert(std::atomic<bool>::is_always_lock_free);

}  // namespace

void set_drawn_line_fd(int fd) { g_drawn_fd.store(fd); }

// Sequentially consistent, as a Dekker pair: either the drawer's increment comes first and the
// handler sees it and waits, or the handler's flag comes first and the drawer sees it and skips.
bool begin_drawing_line() {
  g_drawing.fetch_add(1);
  if (!g_stopping.load()) return true;
  g_drawing.fetch_sub(1);
  return false;
}

void end_drawing_line() { g_drawing.fetch_sub(1); }

void erase_drawn_line_from_signal_handler() {
  g_stopping.store(true);
  // A frame mid-write in another thread finishes first. Bounded: the handler may be running on
  // the drawing thread itself, whose frame then never finishes (nor lands after the erase).
  for (int i = 0; i < 100 && g_drawing.load() > 0; ++i) {
    timespec ms{0, 1000 * 1000};
    ::nanosleep(&ms, nullptr);
  }
  const int fd = g_drawn_fd.exchange(-1);
  if (fd < 0) return;
  static const char kErase[] = "\r\033[K";
  ssize_t ignored = ::write(fd, kErase, sizeof kErase - 1);
  (void)ignored;  // nothing to do about a failed write in a handler that is about to re-raise
}

}  // namespace fabkit
