// common/input_file: every document fabcheck is given by name is read under a cap, whatever it
// is: a file over the cap is refused by its size, a FIFO or standard input that never ends at
// cap+1 bytes, a device before it is opened, and a FIFO that no one writes reads as empty instead
// of blocking. Each reading test runs under a deadline: a reader that does not stop fails it
// instead of hanging the suite.
#include "common/input_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "common/errors.h"
#include "common/replay_file.h"
#include "tests/support/stream_feeder.h"
#include "tests/support/ttar.h"

namespace fabkit {
namespace {

using testing::StreamFeeder;
using testing::TempDir;
constexpr auto kDeadline = std::chrono::seconds(30);
constexpr uint64_t kCap = 1 << 20;

InputSpec spec(bool allow_stdin = false) {
  InputSpec s{"test-reader", kCap, "give a small file", allow_stdin};
  s.fifo_writer_wait_ms = 300;
  return s;
}

std::string usage_error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

// Runs read() on a thread; past the deadline calls unblock() (which must end the read, e.g. by
// closing the writer) and fails.
std::string error_within_deadline(const std::function<void()>& read,
                                  const std::function<void()>& unblock) {
  auto f = std::async(std::launch::async, [&] { return usage_error_of(read); });
  if (f.wait_for(kDeadline) != std::future_status::ready) {
    unblock();
    ADD_FAILURE() << "the reader was still reading after " << kDeadline.count() << " s";
  }
  return f.get();
}

void expect_has(const std::string& text, const std::string& needle) {
  EXPECT_NE(text.find(needle), std::string::npos) << "no \"" << needle << "\" in: " << text;
}

TEST(InputFile, ReadsARegularFileWhole) {
  TempDir dir("input-file");
  testing::write_file(dir.path() / "a.json", std::string(kCap, 'a'));
  EXPECT_EQ(read_input((dir.path() / "a.json").string(), spec()).size(), kCap);
  std::string pieces;
  EXPECT_EQ(read_input_pieces((dir.path() / "a.json").string(), spec(),
                              [&](std::string_view p) { pieces.append(p); }),
            kCap);
  EXPECT_EQ(pieces, std::string(kCap, 'a'));
}

TEST(InputFile, AFileOverTheCapIsRefusedByItsSizeNamingFileSizeCapAndFix) {
  TempDir dir("input-file");
  const std::string path = (dir.path() / "big.json").string();
  testing::write_file(path, "");
  ASSERT_EQ(::truncate(path.c_str(), 5 << 20), 0);  // sparse: nothing written
  const std::string e = usage_error_of([&] { read_input(path, spec()); });
  expect_has(e, "test-reader " + path +
                    ": more than 1 MiB (5242880 bytes, over the limit of "
                    "1048576 bytes); give a small file");
}

TEST(InputFile, EarlierInputsCountAgainstTheSameCap) {
  TempDir dir("input-file");
  const std::string path = (dir.path() / "b.log").string();
  testing::write_file(path, std::string(1000, 'b'));
  InputSpec s = spec();
  s.counted_before = kCap - 999;
  expect_has(usage_error_of([&] { read_input(path, s); }),
             "more than 1 MiB together with the inputs before it (1048577 bytes in all");
  s.counted_before = kCap - 1000;
  EXPECT_EQ(read_input(path, s).size(), 1000u);
}

TEST(InputFile, AnEndlessFifoIsRefusedAtTheCap) {
  TempDir dir("input-file");
  const std::string path = (dir.path() / "endless").string();
  StreamFeeder feeder(path, 64ull << 20, "{\"kind\": \"node\"} ");
  const std::string e =
      error_within_deadline([&] { read_input(path, spec()); }, [&] { feeder.stop(); });
  expect_has(e, "test-reader " + path + ": more than 1 MiB (still going after 1048577 bytes");
  // What was written is what the pipe holds plus one read past the cap, not the whole stream.
  EXPECT_LT(feeder.written(), 8ull << 20);
}

// Opened for reading, a FIFO blocks in open() until a writer comes: it is opened non-blocking,
// and the wait for a writer ends after fifo_writer_wait_ms.
TEST(InputFile, AFifoNoOneOpensForWritingIsRefusedAfterTheWait) {
  TempDir dir("input-file");
  const std::string path = (dir.path() / "silent").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  const std::string e =
      error_within_deadline([&] { read_input(path, spec()); },
                            [&] { ::close(::open(path.c_str(), O_WRONLY)); });  // unblocks open()
  expect_has(e, "test-reader " + path +
                    ": a FIFO that no process opened for writing within 300 ms; give a small file");
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
}

// A writer that opens the FIFO after the reader did, and is slow to write, is waited for.
TEST(InputFile, AFifoWriterThatComesLaterIsReadWhole) {
  TempDir dir("input-file");
  const std::string path = (dir.path() / "late").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int fd = ::open(path.c_str(), O_WRONLY);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // past the writer wait
    EXPECT_EQ(::write(fd, "{}", 2), 2);
    ::close(fd);
  });
  std::string text;
  const std::string e = error_within_deadline([&] { text = read_input(path, spec()); }, [] {});
  writer.join();
  EXPECT_EQ(e, "(no error)");
  EXPECT_EQ(text, "{}");
}

TEST(InputFile, EndlessStandardInputIsRefusedAtTheCap) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  const int saved = ::dup(STDIN_FILENO);
  ASSERT_EQ(::dup2(p[0], STDIN_FILENO), STDIN_FILENO);
  ::close(p[0]);
  {
    StreamFeeder feeder(p[1], 64ull << 20, "NCCL INFO x\n");
    const std::string e =
        error_within_deadline([&] { read_input("-", spec(true)); }, [&] { feeder.stop(); });
    expect_has(e, "test-reader standard input: more than 1 MiB (still going after 1048577 bytes");
    ::dup2(saved, STDIN_FILENO);  // closes the pipe's read end: the feeder sees EPIPE
  }
  ::close(saved);
}

TEST(InputFile, DevicesDirectoriesAndMissingFilesAreRefusedWithoutReading) {
  TempDir dir("input-file");
  auto start = std::chrono::steady_clock::now();
  expect_has(usage_error_of([&] { read_input("/dev/zero", spec()); }),
             "test-reader /dev/zero: is a character device, not a file or a pipe; give a small "
             "file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  expect_has(usage_error_of([&] { read_input(dir.path().string(), spec()); }),
             "is a directory, not a file or a pipe");
  expect_has(usage_error_of([&] { read_input((dir.path() / "absent").string(), spec()); }),
             "cannot open: No such file or directory; give a small file");
  // "-" is a file name unless the reader takes standard input.
  expect_has(usage_error_of([&] { read_input("-", spec(false)); }), "test-reader -: cannot open");
}

// `--nvml-replay FIFO` (and the other replay options) blocked in open() while no one wrote it.
TEST(ReplayFile, AFifoNoOneWritesIsRefusedNamingTheOption) {
  TempDir dir("input-file");
  const std::string path = (dir.path() / "replay.json").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const std::string e = error_within_deadline(
      [&] { read_replay_json("--nvml-replay " + path, path, 4 << 20, "; give a recorded file"); },
      [&] { ::close(::open(path.c_str(), O_WRONLY)); });
  expect_has(e,
             "--nvml-replay " + path + ": a FIFO that no process opened for writing within 10 s");
  expect_has(usage_error_of([&] {
               read_replay_json("--qos-replay /dev/zero", "/dev/zero", 4 << 20, "; give one");
             }),
             "--qos-replay /dev/zero: is a character device, not a file or a pipe; give one");
}

}  // namespace
}  // namespace fabkit
