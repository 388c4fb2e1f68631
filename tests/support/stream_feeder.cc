#include "tests/support/stream_feeder.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <system_error>

namespace fabkit::testing {

StreamFeeder::StreamFeeder(std::filesystem::path fifo, uint64_t bytes, std::string pattern)
    : fifo_(std::move(fifo)), bytes_(bytes), pattern_(std::move(pattern)) {
  ::signal(SIGPIPE, SIG_IGN);  // a reader that stops at its cap closes its end: EPIPE, not death
  if (::mkfifo(fifo_.c_str(), 0600) != 0)
    throw std::system_error(errno, std::generic_category(), "mkfifo " + fifo_.string());
  thread_ = std::thread([this] {
    // Non-blocking open fails (ENXIO) until a reader has it open: retried, so a reader that
    // refuses the FIFO without opening it leaves no thread blocked in open().
    int fd = -1;
    while (!stop_ && (fd = ::open(fifo_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (fd >= 0) run(fd);
  });
}

StreamFeeder::StreamFeeder(int write_fd, uint64_t bytes, std::string pattern)
    : bytes_(bytes), pattern_(std::move(pattern)) {
  ::signal(SIGPIPE, SIG_IGN);
  ::fcntl(write_fd, F_SETFL, ::fcntl(write_fd, F_GETFL) | O_NONBLOCK);
  thread_ = std::thread([this, write_fd] { run(write_fd); });
}

void StreamFeeder::run(int fd) {
  std::string chunk;
  while (chunk.size() < (1 << 16)) chunk += pattern_;
  while (!stop_ && written_ < bytes_) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), bytes_ - written_));
    const ssize_t w = ::write(fd, chunk.data(), n);
    if (w < 0 && errno == EPIPE) break;  // the reader closed its end
    if (w > 0) written_ += static_cast<uint64_t>(w);
  }
  while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ::close(fd);
}

void StreamFeeder::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

StreamFeeder::~StreamFeeder() {
  stop();
  if (!fifo_.empty()) ::unlink(fifo_.c_str());
}

}  // namespace fabkit::testing
