// common/trusted_path.h: the one rule for what root may run, load or write through. The uid that
// plays "another user" is 65534 (nobody); entries are handed to it with chown, so the tests that
// need one run as root (as the suite does) and skip otherwise.
#include "common/trusted_path.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errors.h"
#include "tests/support/ttar.h"

namespace fabkit {
namespace {
namespace fs = std::filesystem;

constexpr uid_t kOther = 65534;

class TrustedPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::chmod(t_.path().c_str(), 0755);
    fs::create_directories(t_.path() / "bin");
    testing::write_file(t_.path() / "bin" / "helper", "#!/bin/sh\n");
    ::chmod((t_.path() / "bin" / "helper").c_str(), 0755);
  }
  // Where the rule failed, or "" when the path passed.
  static std::string failing(const fs::path& p, TrustOptions o = {}) {
    auto d = find_distrust(p, o);
    return d ? d->component + " | " + d->problem : "";
  }
  testing::TempDir t_{"trusted_path"};
};

TEST_F(TrustedPathTest, RootOwnedPathsUnderStickyTmpPass) {
  // The temp directory lies in /tmp (sticky, writable by all): an ancestor that may be sticky.
  EXPECT_EQ(failing(t_.path() / "bin" / "helper"), "");
  TrustOptions file;
  file.regular_file = true;
  EXPECT_EQ(failing(t_.path() / "bin" / "helper", file), "");
  EXPECT_NE(failing(t_.path() / "bin", file).find("is not a regular file"), std::string::npos);
}

TEST_F(TrustedPathTest, AnEntryOfAnotherUserFailsNamingIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown to another uid needs root";
  ASSERT_EQ(::chown((t_.path() / "bin").c_str(), kOther, kOther), 0);
  const std::string f = failing(t_.path() / "bin" / "helper");
  EXPECT_EQ(f.rfind((t_.path() / "bin").string() + " | belongs to uid 65534", 0), 0u) << f;
  // The program itself owned by another user fails just the same.
  ASSERT_EQ(::chown((t_.path() / "bin").c_str(), 0, 0), 0);
  ASSERT_EQ(::chown((t_.path() / "bin" / "helper").c_str(), kOther, kOther), 0);
  EXPECT_NE(failing(t_.path() / "bin" / "helper").find("belongs to uid 65534"), std::string::npos);
}

TEST_F(TrustedPathTest, WritableByOthersFailsUnlessAStickyAncestor) {
  ::chmod((t_.path() / "bin").c_str(), 0775);
  EXPECT_NE(failing(t_.path() / "bin" / "helper").find("is writable by its group"),
            std::string::npos);
  ::chmod((t_.path() / "bin").c_str(), 0777);
  EXPECT_NE(failing(t_.path() / "bin" / "helper").find("writable by others without the sticky bit"),
            std::string::npos);
  ::chmod((t_.path() / "bin").c_str(), 01777);
  EXPECT_EQ(failing(t_.path() / "bin" / "helper"), "");
  // As the path itself a sticky directory passes only where the caller allows it (an output
  // directory such as /tmp); a program writable by others never does.
  EXPECT_NE(failing(t_.path() / "bin").find("is writable by others"), std::string::npos);
  TrustOptions out;
  out.sticky_leaf_ok = true;
  EXPECT_EQ(failing(t_.path() / "bin", out), "");
  ::chmod((t_.path() / "bin").c_str(), 0755);
  ::chmod((t_.path() / "bin" / "helper").c_str(), 0757);
  EXPECT_NE(failing(t_.path() / "bin" / "helper", out).find("is writable by others (mode 0757)"),
            std::string::npos);
}

TEST_F(TrustedPathTest, SymbolicLinksAreFollowedAndTheirTargetsJudged) {
  // A root-owned relative link to a trusted program passes.
  fs::create_symlink("bin/helper", t_.path() / "ok");
  EXPECT_EQ(failing(t_.path() / "ok"), "");
  // A link to a directory others may write fails there, named by its real path.
  fs::create_directories(t_.path() / "open");
  ::chmod((t_.path() / "open").c_str(), 0777);
  testing::write_file(t_.path() / "open" / "x", "");
  fs::create_directory_symlink(t_.path() / "open", t_.path() / "alias");
  EXPECT_EQ(failing(t_.path() / "alias" / "x").rfind((t_.path() / "open").string() + " |", 0), 0u);
  // A loop is named, not followed forever.
  fs::create_symlink("loop_b", t_.path() / "loop_a");
  fs::create_symlink("loop_a", t_.path() / "loop_b");
  EXPECT_NE(failing(t_.path() / "loop_a").find("symbolic links on its way (a loop)"),
            std::string::npos);
  EXPECT_NE(failing(t_.path() / "missing").find("does not exist"), std::string::npos);
}

TEST_F(TrustedPathTest, ALinkAnotherUserMadeFailsWhereverItPoints) {
  if (::geteuid() != 0) GTEST_SKIP() << "lchown to another uid needs root";
  // In a sticky directory anyone may add a link; it points to a root-owned, trusted program.
  fs::create_directories(t_.path() / "shared");
  ::chmod((t_.path() / "shared").c_str(), 01777);
  fs::create_symlink(t_.path() / "bin" / "helper", t_.path() / "shared" / "helper");
  ASSERT_EQ(::lchown((t_.path() / "shared" / "helper").c_str(), kOther, kOther), 0);
  EXPECT_NE(failing(t_.path() / "shared" / "helper").find("is a symbolic link owned by uid 65534"),
            std::string::npos);
}

TEST_F(TrustedPathTest, ARelativePathIsJudgedThroughTheCurrentDirectory) {
  char old[4096];
  ASSERT_NE(::getcwd(old, sizeof old), nullptr);
  ::chmod((t_.path() / "bin").c_str(), 0777);
  ASSERT_EQ(::chdir((t_.path() / "bin").c_str()), 0);
  const std::string f = failing("helper");
  ASSERT_EQ(::chdir(old), 0);
  EXPECT_NE(f.find((t_.path() / "bin").string() + " | is writable by others"), std::string::npos)
      << f;
}

TEST_F(TrustedPathTest, RequireTrustedNamesWhatTheCallerUsesItFor) {
  ::chmod((t_.path() / "bin").c_str(), 0777);
  try {
    require_trusted("the NCCL runner", t_.path() / "bin" / "helper");
    FAIL() << "accepted a program in a directory anyone may write";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("the NCCL runner " + (t_.path() / "bin" / "helper").string() + ": ", 0), 0u)
        << m;
    EXPECT_NE(m.find("chmod go-w " + (t_.path() / "bin").string()), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace fabkit
