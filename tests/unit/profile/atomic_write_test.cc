#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "common/file_reader.h"
#include "profile/atomic_write.h"
#include "tests/support/ttar.h"

namespace fabkit::profile {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AtomicWrite, ReplacesContentAndLeavesNoTempFile) {
  fabkit::testing::TempDir dir("profile-atomic");
  auto path = dir.path() / "cluster.json";
  write_file_atomically(path, "old\n");
  write_file_atomically(path, "new\n");
  EXPECT_EQ(slurp(path), "new\n");
  EXPECT_EQ(list_dir(dir.path()), std::vector<std::string>{"cluster.json"});
  auto perms = std::filesystem::status(path).permissions();
  EXPECT_NE(perms & std::filesystem::perms::others_read, std::filesystem::perms::none);
}

TEST(AtomicWrite, FailureNamesThePathAndKeepsTheOldFile) {
  fabkit::testing::TempDir dir("profile-atomic");
  try {
    write_file_atomically(dir.path() / "missing-dir" / "cluster.json", "x");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("missing-dir/cluster.json"), std::string::npos) << e.what();
  }
  // Renaming over a directory fails after the temp file was written: it must be cleaned up.
  std::filesystem::create_directory(dir.path() / "taken");
  fabkit::testing::write_file(dir.path() / "taken" / "keep", "k");
  EXPECT_THROW(write_file_atomically(dir.path() / "taken", "x"), UsageError);
  EXPECT_EQ(list_dir(dir.path()), std::vector<std::string>{"taken"});
  EXPECT_EQ(slurp(dir.path() / "taken" / "keep"), "k");
}

}  // namespace
}  // namespace fabkit::profile
