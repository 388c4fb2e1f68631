// A writer at the other end of a FIFO or a pipe, for tests of readers that must stop at a size
// cap: it writes `bytes` bytes of `pattern` over and over, then holds the pipe open without
// writing (as a stalled or endless writer does) until stop(). A reader that keeps reading past
// the cap blocks then, instead of filling memory, and the test's deadline catches it.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

namespace fabkit::testing {

class StreamFeeder {
 public:
  // Makes a FIFO at `fifo` (removed again by the destructor) and feeds whoever opens it.
  StreamFeeder(std::filesystem::path fifo, uint64_t bytes, std::string pattern);
  // Feeds the write end of a pipe (taken over: closed by stop()).
  StreamFeeder(int write_fd, uint64_t bytes, std::string pattern);
  ~StreamFeeder();
  StreamFeeder(const StreamFeeder&) = delete;
  StreamFeeder& operator=(const StreamFeeder&) = delete;

  // Closes the write end, so a reader still reading sees the end of the stream.
  void stop();
  uint64_t written() const { return written_; }

 private:
  void run(int fd);
  std::filesystem::path fifo_;
  uint64_t bytes_;
  std::string pattern_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> written_{0};
  std::thread thread_;
};

}  // namespace fabkit::testing
