// common/helper_program.h: where fabcheck finds fabcheck-nccl-runner and fabcheck-gpu-bench.
#include "common/helper_program.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "tests/support/ttar.h"

namespace fabkit {
namespace {
namespace fs = std::filesystem;

class HelperProgramTest : public ::testing::Test {
 protected:
  // An installed prefix (bin/, libexec/fabkit/) and a build tree, each with a copy of the helper.
  void SetUp() override {
    unsetenv(kEnv);
    fs::create_directories(prefix() / "bin");
    fs::create_directories(installed().parent_path());
    make_executable(installed());
    make_executable(elsewhere());
  }
  void TearDown() override { unsetenv(kEnv); }

  static void make_executable(const fs::path& p) {
    testing::write_file(p, "#!/bin/sh\n");
    ::chmod(p.c_str(), 0755);
  }
  fs::path prefix() const { return dir_.path() / "prefix"; }
  fs::path installed() const {
    return (prefix() / "bin" / installed_helpers_from_bin() / "fabcheck-gpu-bench").lexically_normal();
  }
  fs::path elsewhere() const { return dir_.path() / "elsewhere" / "fabcheck-gpu-bench"; }
  HelperProgram helper() const { return {"fabcheck-gpu-bench", kEnv}; }
  std::string bin() const { return (prefix() / "bin").string(); }

  static constexpr const char* kEnv = "FABKIT_TEST_HELPER";
  testing::TempDir dir_{"helper-program"};
};

TEST_F(HelperProgramTest, TheInstalledLayoutIsFoundRelativeToFabchecksOwnFolder) {
  EXPECT_EQ(installed_helpers_from_bin(), "../libexec/fabkit");  // GNUInstallDirs' defaults
  EXPECT_EQ(find_helper_program(helper(), bin()), bin() + "/../libexec/fabkit/fabcheck-gpu-bench");
  // Relocated: the same tree under another name still finds its own copy, not the build's.
  fs::rename(prefix(), dir_.path() / "moved");
  const std::string moved_bin = (dir_.path() / "moved" / "bin").string();
  EXPECT_EQ(find_helper_program(helper(), moved_bin), moved_bin + "/../libexec/fabkit/fabcheck-gpu-bench");
}

TEST_F(HelperProgramTest, TheEnvironmentThenACopyBesideFabcheckComeFirst) {
  make_executable(prefix() / "bin" / "fabcheck-gpu-bench");
  EXPECT_EQ(find_helper_program(helper(), bin()), bin() + "/fabcheck-gpu-bench");
  setenv(kEnv, elsewhere().c_str(), 1);
  EXPECT_EQ(find_helper_program(helper(), bin()), elsewhere().string());
  // A variable naming nothing runnable is passed over, not returned.
  setenv(kEnv, (dir_.path() / "nowhere").c_str(), 1);
  EXPECT_EQ(find_helper_program(helper(), bin()), bin() + "/fabcheck-gpu-bench");
}

TEST_F(HelperProgramTest, NothingRunnableIsEmpty) {
  ::chmod(installed().c_str(), 0644);  // there, but not executable
  EXPECT_EQ(find_helper_program(helper(), bin()), "");
  EXPECT_EQ(find_helper_program(HelperProgram{"fabcheck-gpu-bench", ""}, ""), "");
}

// `--ship` runs the copy from <ship dir>/fabcheck-ship.X/ (root's, 0700) in a sticky directory
// anyone may write, such as /tmp: the installed layout beside it, <ship dir>/libexec/fabkit/, is
// anyone's to create. Such a helper was run as root; it must be refused and named.
TEST_F(HelperProgramTest, AHelperAnotherUserCouldPlantIsRefusedAndNamed) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown to another uid needs root";
  const fs::path tmp = dir_.path() / "tmp";
  const fs::path ship = tmp / "fabcheck-ship.X";
  fs::create_directories(ship);
  ::chmod(tmp.c_str(), 01777);
  ::chmod(ship.c_str(), 0700);
  const fs::path planted = tmp / "libexec" / "fabkit" / "fabcheck-gpu-bench";
  make_executable(planted);
  for (const fs::path& p : {tmp / "libexec", tmp / "libexec" / "fabkit", planted})
    ASSERT_EQ(::chown(p.c_str(), 65534, 65534), 0);
  std::vector<std::string> refused;
  EXPECT_EQ(find_helper_program(helper(), ship.string(), &refused), "");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].find((tmp / "libexec").string() + " belongs to uid 65534"),
            std::string::npos)
      << refused[0];
  EXPECT_NE(refused_suffix(refused).find("; refused " + ship.string() + "/../libexec/fabkit/"),
            std::string::npos);
}

// The environment's path is held to the same rule: a program in a directory anyone may write is
// refused (and the search goes on), not run.
TEST_F(HelperProgramTest, AnEnvironmentPathOthersMayReplaceIsRefused) {
  ::chmod(elsewhere().parent_path().c_str(), 0777);
  setenv(kEnv, elsewhere().c_str(), 1);
  std::vector<std::string> refused;
  EXPECT_EQ(find_helper_program(helper(), bin(), &refused),
            bin() + "/../libexec/fabkit/fabcheck-gpu-bench");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].find("writable by others without the sticky bit"), std::string::npos)
      << refused[0];
  refused.clear();
  EXPECT_EQ(trusted_helper_path(elsewhere().string(), &refused), "");
  EXPECT_EQ(refused.size(), 1u);
}

TEST_F(HelperProgramTest, SelfDirIsTheTestBinarysFolder) {
  const std::string self = self_executable_dir();
  ASSERT_FALSE(self.empty());
  EXPECT_TRUE(fs::exists(fs::path(self) / "common_test")) << self;
}

}  // namespace
}  // namespace fabkit
