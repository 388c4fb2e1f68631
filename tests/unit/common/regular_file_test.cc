// common/regular_file.h: only regular files are read, their size is checked before a byte is read,
// and a name resolved beneath a directory never leads out of it.
#include "common/regular_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>

#include "common/errors.h"
#include "tests/support/ttar.h"

namespace fs = std::filesystem;

namespace fabkit {
namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

TEST(RegularFile, ReadsARegularFileWithinItsLimit) {
  testing::TempDir t("regular_file");
  testing::write_file(t.path() / "a.json", "{\"x\": 1}");
  EXPECT_EQ(read_regular_file(t.path() / "a.json", 8, "test"), "{\"x\": 1}");
}

TEST(RegularFile, RefusesAFileOverItsLimitByItsSizeAndSaysWhy) {
  testing::TempDir t("regular_file");
  testing::write_file(t.path() / "big", std::string(100, 'a'));
  const std::string m = error_of([&] { read_regular_file(t.path() / "big", 99, "a reason"); });
  EXPECT_NE(
      m.find((t.path() / "big").string() + ": 100 bytes, more than the 99-byte limit (a reason)"),
      std::string::npos)
      << m;
}

TEST(RegularFile, RefusesDevZeroAndAFifoAtOnce) {
  testing::TempDir t("regular_file");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(error_of([&] {
              read_regular_file("/dev/zero", 1 << 20, "test");
            }).find("/dev/zero: is a character device, not a regular file"),
            std::string::npos);
  ASSERT_EQ(::mkfifo((t.path() / "fifo").c_str(), 0600), 0);
  // No writer: a blocking open would wait here for ever.
  EXPECT_NE(
      error_of([&] { read_regular_file(t.path() / "fifo", 1 << 20, "test"); }).find("is a FIFO"),
      std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

class Beneath : public ::testing::TestWithParam<bool> {
 public:
  Beneath() : t_("regular_file_beneath") {
    testing::write_file(t_.path() / "dir" / "sub" / "inside", "in");
    testing::write_file(t_.path() / "outside", "secret");
    fs::create_symlink(t_.path() / "outside", t_.path() / "dir" / "abs-link");
    fs::create_symlink("../outside", t_.path() / "dir" / "rel-link");
    fs::create_symlink("sub/inside", t_.path() / "dir" / "in-link");
    dir_ = open_directory(t_.path() / "dir", "dir");
  }
  // The openat2 way (kernel >= 5.6) or the component walk older kernels get.
  std::string read(const std::string& rel) {
    UniqueFd fd = GetParam() ? open_regular_beneath(dir_.get(), rel, rel)
                             : detail::open_beneath_by_components(dir_.get(), rel, false, rel);
    return read_all_capped(fd.get(), 100, rel, "test");
  }
  testing::TempDir t_;
  UniqueFd dir_;
};

TEST_P(Beneath, OpensFilesInsideTheDirectory) {
  EXPECT_EQ(read("sub/inside"), "in");
  EXPECT_EQ(read("./sub//inside"), "in");
}

TEST_P(Beneath, RefusesAbsolutePathsDotDotAndSymlinksLeadingOut) {
  EXPECT_NE(error_of([&] { read((t_.path() / "outside").string()); }).find("is an absolute path"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read("sub/../../outside"); }).find("has a '..' component"),
            std::string::npos);
  for (const char* link : {"abs-link", "rel-link"}) {
    const std::string m = error_of([&] { read(link); });
    EXPECT_EQ(m.find("(no UsageError)"), std::string::npos) << link;
    EXPECT_NE(m.find(link), std::string::npos) << m;
  }
}

TEST_P(Beneath, FollowsASymlinkThatStaysInsideOnlyWithOpenat2) {
  if (GetParam()) {
    EXPECT_EQ(read("in-link"), "in");
  } else {
    EXPECT_NE(error_of([&] { read("in-link"); }).find("is a symlink"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(RegularFile, Beneath, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Openat2" : "ComponentWalk"; });

}  // namespace
}  // namespace fabkit
