#include "reports/input_document.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <fstream>
#include <future>

#include "common/errors.h"
#include "tests/support/stream_feeder.h"
#include "tests/support/ttar.h"

namespace fabkit::reports {
namespace {

std::string fixture(const std::string& rel) { return std::string(FABKIT_FIXTURES) + "/" + rel; }

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char tmpl[] = "/tmp/fabkit_input_XXXXXX";
    int fd = mkstemp(tmpl);
    ::close(fd);
    path_ = tmpl;
    std::ofstream(path_) << text;
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(LoadInput, KindsFromTheDocumentsOwnFields) {
  EXPECT_EQ(load_input(fixture("profile/node-gpu-ib-01.json")).kind, InputKind::kNodeReport);
  EXPECT_EQ(load_input(fixture("reports/pair-netns-veth.json")).kind, InputKind::kPairReport);
  EXPECT_EQ(load_input(fixture("reports/cluster-4-hosts.json")).kind, InputKind::kClusterReport);
  EXPECT_EQ(load_input(fixture("profile/cluster-ib.json")).kind, InputKind::kProfile);
}

TEST(LoadInput, MetricsJsonlOneOrManyLines) {
  TempFile many("{\"step\": 1, \"loss\": 2.5}\n\n{\"step\": 2, \"loss\": 2.4}\n");
  auto d = load_input(many.path());
  EXPECT_EQ(d.kind, InputKind::kMetrics);
  ASSERT_EQ(d.records.size(), 2u);
  EXPECT_EQ(d.records[1]["loss"], 2.4);
  TempFile one("{\"step\": 1, \"loss\": 2.5}\n");
  EXPECT_EQ(load_input(one.path()).records.size(), 1u);
}

void expect_usage_error(const std::string& path, const std::string& needle) {
  try {
    load_input(path);
    FAIL() << "no error for " << path;
  } catch (const UsageError& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;  // the file is named first
    EXPECT_NE(m.find(needle), std::string::npos) << m;
  }
}

TEST(LoadInput, UnknownInputsNameTheFileAndWhatIsAccepted) {
  TempFile text("hello\n");
  expect_usage_error(text.path(), "not JSON, and not JSONL either: line 1");
  TempFile obj("{\"name\": 1}");
  expect_usage_error(obj.path(), "no string field 'kind'");
  TempFile err(
      "{\"schema_version\": 1, \"kind\": \"pair\", \"error\": {\"exit_code\": 2, \"message\": "
      "\"bad host\"}}");
  expect_usage_error(err.path(), "error document (a failed run), not a report: bad host");
  TempFile badline("{\"step\": 1}\n{\"loss\": 2}\n");
  expect_usage_error(badline.path(), "JSONL record 2 has no integer 'step'");
  TempFile empty("");
  expect_usage_error(empty.path(), "empty file");
  expect_usage_error("/nonexistent/x.json", "cannot open");
}

// `fabcheck report FIFO` (or an endless pipe) read until memory ran out: it is refused at the
// 64 MiB cap. The feeder writes 80 MiB and then holds the FIFO open: a reader without a cap
// blocks there, and the deadline fails the test instead of hanging it.
TEST(LoadInput, AnEndlessPipeIsRefusedAtTheCapWithinADeadline) {
  testing::TempDir dir("load-input");
  const std::string path = (dir.path() / "endless.json").string();
  testing::StreamFeeder feeder(path, kMaxReportBytes + (16 << 20), "[1,2,3,4,5,6,7,8,9,0],");
  auto f = std::async(std::launch::async, [&]() -> std::string {
    try {
      load_input(path);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(read whole)";
  });
  if (f.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    feeder.stop();
    ADD_FAILURE() << "still reading after 60 s: no cap";
  }
  const std::string e = f.get();
  EXPECT_NE(e.find(path + ": more than 64 MiB (still going after 67108865 "
                   "bytes"),
            std::string::npos)
      << e;
}

// A FIFO no one writes blocked `fabcheck report` in open() forever: it is refused after 10 s.
TEST(LoadInput, AFifoNoOneWritesIsRefusedAfterABoundedWait) {
  testing::TempDir dir("load-input");
  const std::string path = (dir.path() / "silent.json").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto f = std::async(std::launch::async, [&]() -> std::string {
    try {
      load_input(path);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "(read)";
  });
  if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ::close(::open(path.c_str(), O_WRONLY));  // the writer it waits for, so the test ends
    ADD_FAILURE() << "blocked in open() for 30 s";
  }
  const std::string e = f.get();
  EXPECT_NE(e.find(path + ": a FIFO that no process opened for writing within 10 s"),
            std::string::npos)
      << e;
}

TEST(LoadInput, DevicesAreRefusedBeforeTheyAreRead) {
  expect_usage_error("/dev/zero", "is a character device, not a file or a pipe");
}

}  // namespace
}  // namespace fabkit::reports
