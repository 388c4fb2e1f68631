// The one atomic file write (common/atomic_file.h): piecewise binary bodies, and every failure
// (a throwing body, a failed stream, an unwritable target) leaves the old file and no temp file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "common/file_reader.h"
#include "tests/support/ttar.h"

namespace fabkit {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AtomicFile, WritesABinaryBodyPiecewiseWithTheGivenMode) {
  testing::TempDir dir("atomic-file");
  auto path = dir.path() / "shard.bin";
  std::string bytes("\0\1\2\xff", 4);
  write_file_atomically(path, [&](std::ostream& out) {
    for (int i = 0; i < 3; ++i) out.write(bytes.data(), 4);
  }, 0600);
  EXPECT_EQ(slurp(path), bytes + bytes + bytes);
  auto perms = std::filesystem::status(path).permissions();
  EXPECT_EQ(perms & std::filesystem::perms::others_read, std::filesystem::perms::none);
}

TEST(AtomicFile, AThrowingOrFailedBodyKeepsTheOldFileAndNoTemp) {
  testing::TempDir dir("atomic-file");
  auto path = dir.path() / "config.json";
  write_file_atomically(path, std::string("old"));
  EXPECT_THROW(write_file_atomically(path, [](std::ostream& out) {
                 out << "partial";
                 throw std::runtime_error("tensor missing");
               }),
               std::runtime_error);
  EXPECT_THROW(write_file_atomically(path, [](std::ostream& out) { out.setstate(std::ios::badbit); }),
               SysErrorException);
  EXPECT_EQ(slurp(path), "old");
  EXPECT_EQ(list_dir(dir.path()), std::vector<std::string>{"config.json"});
}

TEST(AtomicFile, FailuresNameTheCallAndPath) {
  testing::TempDir dir("atomic-file");
  try {
    write_file_atomically(dir.path() / "no-such-dir" / "x", std::string("x"));
    FAIL();
  } catch (const SysErrorException& e) {
    EXPECT_EQ(e.error().call, "mkstemp");
    EXPECT_NE(e.error().object.find("no-such-dir"), std::string::npos);
  }
}

}  // namespace
}  // namespace fabkit
