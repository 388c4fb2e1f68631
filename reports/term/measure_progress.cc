#include "reports/term/measure_progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common/terminal_line.h"

namespace fabkit::reports::term {
namespace {

constexpr size_t kBarCells = 20;
constexpr const char* kSpinner = "|/-\\";

// Labels carry host and interface names from the user and the agents: a control byte would move
// the cursor or recolor the terminal, and a cut through a multi-byte character would print junk,
// so the frame is plain printable ASCII.
std::string printable(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) c = '?';
  }
  return out;
}

double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

size_t terminal_columns(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

}  // namespace

std::string format_measure_frame(const std::string& label, uint64_t done, uint64_t total,
                                 double elapsed_s, std::optional<double> eta_s, int spin,
                                 size_t columns) {
  std::string tail;
  std::string head;
  if (total == 0) {
    head = std::string(1, kSpinner[spin & 3]) + " ";
    tail = "  " + format_duration(elapsed_s);
  } else {
    const uint64_t d = std::min(done, total);
    const size_t filled = static_cast<size_t>(d * kBarCells / total);
    char pct[64];
    std::snprintf(pct, sizeof pct, "%3d%%  %llu/%llu", static_cast<int>(d * 100 / total),
                  static_cast<unsigned long long>(d), static_cast<unsigned long long>(total));
    tail = "  [" + std::string(filled, '#') + std::string(kBarCells - filled, '-') + "] " + pct +
           "  ETA " + format_duration(d == total ? std::optional<double>(0.0) : eta_s);
  }
  std::string text = printable(label);
  const size_t room = columns > 1 ? columns - 1 : 0;
  const size_t fixed = head.size() + tail.size();
  if (fixed + text.size() > room) {
    // The label gives way first (it is the longest part); an ellipsis says it was cut.
    size_t keep = room > fixed + 3 ? room - fixed - 3 : 0;
    text = keep > 0 ? text.substr(0, keep) + "..." : "";
  }
  std::string frame = head + text + tail;
  if (frame.size() > room) frame.resize(room);
  return frame;
}

MeasureProgress::MeasureProgress(MeasureProgressOptions o)
    : o_(std::move(o)),
      active_(o_.enabled && o_.is_tty.value_or(::isatty(o_.fd) == 1)),
      line_(o_.fd, active_) {
  if (!o_.now_s) o_.now_s = steady_now_s;
  if (active_ && o_.redraw_thread) redraw_ = std::thread([this] { redraw_loop(); });
}

MeasureProgress::~MeasureProgress() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (redraw_.joinable()) redraw_.join();
  std::lock_guard<std::mutex> lock(mu_);
  erase();
}

void MeasureProgress::redraw_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(100));
    if (!stopping_) draw_if_due(o_.now_s());
  }
}

void MeasureProgress::begin(const std::string& label, uint64_t total_units) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  // A new measurement has not run its second yet: whatever the last one drew goes.
  erase();
  open_ = true;
  label_ = label;
  total_ = total_units;
  done_ = 0;
  start_s_ = o_.now_s();
  last_frame_s_.reset();
  eta_ = EtaEstimator();
  eta_.observe(0, start_s_);
}

void MeasureProgress::advance(uint64_t units, const std::string& label) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!open_) return;
  done_ += units;
  if (!label.empty()) label_ = label;
  const double now = o_.now_s();
  if (units > 0) eta_.observe(static_cast<int64_t>(done_), now);  // a relabel is not progress
  draw_if_due(now);
}

void MeasureProgress::set_total(uint64_t total_units) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (open_) total_ = total_units;
}

void MeasureProgress::end() {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  open_ = false;
  erase();
}

void MeasureProgress::tick() {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  draw_if_due(o_.now_s());
}

void MeasureProgress::clear() {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  erase();
}

void MeasureProgress::draw_if_due(double now) {
  if (!active_ || !open_) return;
  const double elapsed = now - start_s_;
  if (elapsed < o_.delay_s) return;
  if (last_frame_s_ && now - *last_frame_s_ < o_.min_redraw_s) return;
  const size_t columns = o_.columns ? o_.columns : terminal_columns(o_.fd);
  const auto eta = total_ ? eta_.seconds_left(static_cast<int64_t>(total_)) : std::nullopt;
  if (!begin_drawing_line()) return;  // a stop signal is erasing the line: draw no more
  line_.draw(format_measure_frame(label_, done_, total_, elapsed, eta, spin_++, columns));
  drawn_ = true;
  set_drawn_line_fd(o_.fd);  // a stop signal erases it (common/terminal_line.h)
  end_drawing_line();
  last_frame_s_ = now;
}

void MeasureProgress::erase() {
  if (drawn_) {
    set_drawn_line_fd(-1);
    line_.clear();
  }
  drawn_ = false;
}

}  // namespace fabkit::reports::term
