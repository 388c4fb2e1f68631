#include "reports/term/progress_line.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "reports/term/eta.h"

namespace fabkit::reports::term {

std::string format_progress(const Progress& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "step %lld/%lld  loss %.4f  tokens/s %.0f  ETA %s",
                static_cast<long long>(p.step), static_cast<long long>(p.total_steps), p.loss,
                p.tokens_per_s, format_duration(p.eta_s).c_str());
  return buf;
}

ProgressLine::ProgressLine(int fd) : ProgressLine(fd, ::isatty(fd) == 1) {}

void ProgressLine::emit(const std::string& s) {
  // Errors are dropped on purpose: stderr is where they would be reported, and a closed terminal
  // must not stop a training run.
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd_, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

void ProgressLine::update(const Progress& p) { draw(format_progress(p)); }

void ProgressLine::draw(const std::string& text) {
  if (tty_) {
    emit("\r" + text + "\x1b[K");  // ESC[K: erase what a longer last line left
    drawn_ = true;
  } else {
    emit(text + "\n");
  }
}

void ProgressLine::clear() {
  if (tty_ && drawn_) emit("\r\x1b[K");
  drawn_ = false;
}

void ProgressLine::finish() {
  if (tty_ && drawn_) emit("\n");
  drawn_ = false;
}

}  // namespace fabkit::reports::term
