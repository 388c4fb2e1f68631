// The one atomic file write (common/atomic_file.h): piecewise binary bodies, and every failure
// (a throwing body, a failed stream, an unwritable target) leaves the old file and no temp file.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

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

// In a directory another user may write (a node_exporter textfile directory owned by its service
// user), the temp file's name can be swapped for a link between its creation and the write, and
// root wrote through it into a root-only file. Such a directory is refused before anything is
// created in it; a sticky one (as /tmp) is not: nobody else may rename what root makes there.
TEST(AtomicFile, ADirectoryAnotherUserControlsIsRefusedBeforeAnythingIsWritten) {
  testing::TempDir dir("atomic-file");
  const auto out = dir.path() / "textfile";
  std::filesystem::create_directories(out);
  ::chmod(out.c_str(), 0777);
  try {
    write_file_atomically(out / "fabcheck.prom", std::string("x 1\n"));
    FAIL() << "wrote into a directory anyone may write";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write into " + out.string() + ": " + out.string() +
                                         " is writable by others without the sticky bit"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(list_dir(out).empty());
  ::chmod(out.c_str(), 01777);
  write_file_atomically(out / "fabcheck.prom", std::string("x 1\n"));
  EXPECT_EQ(slurp(out / "fabcheck.prom"), "x 1\n");
  if (::geteuid() != 0) return;
  ::chmod(out.c_str(), 0755);
  ASSERT_EQ(::chown(out.c_str(), 65534, 65534), 0);
  EXPECT_THROW(write_file_atomically(out / "fabcheck.prom", std::string("x 2\n")), UsageError);
  EXPECT_EQ(slurp(out / "fabcheck.prom"), "x 1\n");
}

}  // namespace
}  // namespace fabkit
