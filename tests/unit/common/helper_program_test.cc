// common/helper_program.h: where fabcheck finds fabcheck-nccl-runner and fabcheck-gpu-bench.
#include "common/helper_program.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

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
    make_executable(build_copy());
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
  fs::path build_copy() const { return dir_.path() / "build" / "fabcheck-gpu-bench"; }
  HelperProgram helper() const {
    return {"fabcheck-gpu-bench", kEnv, build_copy().string()};
  }
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
  setenv(kEnv, build_copy().c_str(), 1);
  EXPECT_EQ(find_helper_program(helper(), bin()), build_copy().string());
  // A variable naming nothing runnable is passed over, not returned.
  setenv(kEnv, (dir_.path() / "nowhere").c_str(), 1);
  EXPECT_EQ(find_helper_program(helper(), bin()), bin() + "/fabcheck-gpu-bench");
}

TEST_F(HelperProgramTest, TheBuildTreeIsLastAndNothingRunnableIsEmpty) {
  fs::remove(installed());
  EXPECT_EQ(find_helper_program(helper(), bin()), build_copy().string());
  ::chmod(build_copy().c_str(), 0644);  // there, but not executable
  EXPECT_EQ(find_helper_program(helper(), bin()), "");
  EXPECT_EQ(find_helper_program(HelperProgram{"fabcheck-gpu-bench", "", ""}, ""), "");
}

TEST_F(HelperProgramTest, SelfDirIsTheTestBinarysFolder) {
  const std::string self = self_executable_dir();
  ASSERT_FALSE(self.empty());
  EXPECT_TRUE(fs::exists(fs::path(self) / "common_test")) << self;
}

}  // namespace
}  // namespace fabkit
