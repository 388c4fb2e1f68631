#include "common/output_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "common/file_reader.h"
#include "tests/support/ttar.h"

namespace fabkit {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OutputFile, ReplacesContentAndLeavesNoTempFile) {
  fabkit::testing::TempDir dir("output-file");
  auto path = dir.path() / "cluster.json";
  write_output_file("--out", path, "old\n");
  write_output_file("--out", path, "new\n");
  EXPECT_EQ(slurp(path), "new\n");
  EXPECT_EQ(list_dir(dir.path()), std::vector<std::string>{"cluster.json"});
  auto perms = std::filesystem::status(path).permissions();
  EXPECT_NE(perms & std::filesystem::perms::others_read, std::filesystem::perms::none);
}

TEST(OutputFile, FailureNamesTheFlagAndThePathAndKeepsTheOldFile) {
  fabkit::testing::TempDir dir("output-file");
  try {
    write_output_file("--profile-out", dir.path() / "missing-dir" / "cluster.json", "x");
    FAIL();
  } catch (const UsageError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("missing-dir/cluster.json"), std::string::npos) << m;
    EXPECT_EQ(m.rfind("--profile-out ", 0), 0u) << m;
  }
  // Renaming over a directory fails after the temp file was written: it must be cleaned up.
  std::filesystem::create_directory(dir.path() / "taken");
  fabkit::testing::write_file(dir.path() / "taken" / "keep", "k");
  try {
    write_output_file("--prom", dir.path() / "taken", "x");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--prom ", 0), 0u) << e.what();
  }
  EXPECT_EQ(list_dir(dir.path()), std::vector<std::string>{"taken"});
  EXPECT_EQ(slurp(dir.path() / "taken" / "keep"), "k");
}

TEST(OutputFile, CheckRefusesAMissingDirectoryAndAnEmptyName) {
  fabkit::testing::TempDir dir("output-file");
  EXPECT_NO_THROW(check_output_path("--html", (dir.path() / "r.html").string()));
  EXPECT_THROW(check_output_path("--html", (dir.path() / "nope" / "r.html").string()), UsageError);
  EXPECT_THROW(check_output_path("--html", ""), UsageError);
  EXPECT_THROW(check_output_path("--html", (dir.path() / "").string()), UsageError);
}

// Checked before any work starts, like a missing directory: root's --prom into a directory
// owned by another user (node_exporter's textfile collector) is a usage error naming the flag,
// the directory and the fix.
TEST(OutputFile, CheckRefusesADirectoryAnotherUserOwns) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown to another uid needs root";
  fabkit::testing::TempDir dir("output-file");
  const auto textfile = dir.path() / "textfile";
  std::filesystem::create_directories(textfile);
  ASSERT_EQ(::chown(textfile.c_str(), 65534, 65534), 0);
  const std::string path = (textfile / "fabcheck.prom").string();
  try {
    check_output_path("--prom", path);
    FAIL() << "accepted a directory uid 65534 owns";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("--prom " + path + ": cannot write into " + textfile.string(), 0), 0u) << m;
    EXPECT_NE(m.find("belongs to uid 65534"), std::string::npos) << m;
    EXPECT_NE(m.find("chown root " + textfile.string()), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace fabkit
