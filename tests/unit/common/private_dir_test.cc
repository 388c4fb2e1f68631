// common/private_dir.h: what a per-user directory must be before fabkit trusts its contents.
#include "common/private_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errors.h"
#include "tests/support/ttar.h"

namespace fabkit {
namespace {
namespace fs = std::filesystem;

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st.st_mode & 07777;
}

PrivateDirOptions opts(bool create = false) {
  PrivateDirOptions o;
  o.what = "test directory";
  o.alternative = "pick another";
  o.create = create;
  return o;
}

// The refusal's message, or "" when the directory was accepted.
std::string refusal(const fs::path& dir, bool create = false) {
  try {
    open_private_dir(dir, opts(create));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

class PrivateDirTest : public ::testing::Test {
 protected:
  void SetUp() override { ::chmod(t_.path().c_str(), 0700); }
  testing::TempDir t_{"private_dir"};
};

TEST_F(PrivateDirTest, CreatesMissingDirectory0700WhateverTheUmask) {
  const mode_t old = ::umask(0);
  PrivateDir d = open_private_dir(t_.path() / "a" / "b" / "ctl", opts(true));
  ::umask(old);
  EXPECT_EQ(d.path, t_.path() / "a" / "b" / "ctl");
  EXPECT_TRUE(d.fd.valid());
  EXPECT_EQ(mode_of(d.path), 0700u);
  // Relative and trailing-slash spellings name the same directory.
  EXPECT_EQ(open_private_dir((t_.path() / "a" / "b" / "ctl").string() + "/", opts()).path, d.path);
}

TEST_F(PrivateDirTest, MissingWithoutCreateIsRefused) {
  EXPECT_NE(refusal(t_.path() / "nope").find("does not exist"), std::string::npos);
}

TEST_F(PrivateDirTest, OursButReadableByOthersIsClosed) {
  fs::create_directory(t_.path() / "open");
  ::chmod((t_.path() / "open").c_str(), 0755);
  EXPECT_EQ(refusal(t_.path() / "open"), "");
  EXPECT_EQ(mode_of(t_.path() / "open"), 0700u);
}

TEST_F(PrivateDirTest, WritableByGroupOrOthersIsRefusedNotChanged) {
  for (mode_t m : {0770, 0707, 0777, 01777}) {
    const fs::path d = t_.path() / ("w" + std::to_string(m));
    fs::create_directory(d);
    ::chmod(d.c_str(), m);
    const std::string e = refusal(d);
    EXPECT_NE(e.find("test directory " + d.string() + " is writable by"), std::string::npos) << e;
    EXPECT_NE(e.find("chmod 700 " + d.string()), std::string::npos) << e;
    EXPECT_NE(e.find(", or pick another"), std::string::npos) << e;
    EXPECT_EQ(mode_of(d), m) << "a refused directory is left as it is";
  }
}

TEST_F(PrivateDirTest, SymlinkIsRefusedNotFollowed) {
  fs::create_directory(t_.path() / "real");
  ::chmod((t_.path() / "real").c_str(), 0700);
  fs::create_directory_symlink(t_.path() / "real", t_.path() / "link");
  for (bool create : {false, true}) {
    const std::string e = refusal(t_.path() / "link", create);
    EXPECT_NE(e.find("is a symbolic link (to " + (t_.path() / "real").string() + ")"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("`rm " + (t_.path() / "link").string() + "`"), std::string::npos) << e;
  }
  // A dangling one too (create must not mkdir through it).
  fs::create_directory_symlink(t_.path() / "later", t_.path() / "dangling");
  EXPECT_NE(refusal(t_.path() / "dangling", true).find("is a symbolic link"), std::string::npos);
  EXPECT_FALSE(fs::exists(t_.path() / "later"));
}

TEST_F(PrivateDirTest, FileIsRefused) {
  testing::write_file(t_.path() / "file", "x");
  EXPECT_NE(refusal(t_.path() / "file", true).find("is a regular file, not a directory"),
            std::string::npos);
}

TEST_F(PrivateDirTest, AnotherUsersDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown to another uid needs root";
  fs::create_directory(t_.path() / "theirs");
  ::chmod((t_.path() / "theirs").c_str(), 0700);
  ASSERT_EQ(::chown((t_.path() / "theirs").c_str(), 65534, 65534), 0);
  const std::string e = refusal(t_.path() / "theirs", true);
  EXPECT_NE(e.find("belongs to uid 65534, not to this user (uid 0)"), std::string::npos) << e;
}

TEST_F(PrivateDirTest, ReplaceableParentIsRefused) {
  // Writable by others without the sticky bit: anyone could rename ours away and put theirs in
  // its place after the check.
  const fs::path open = t_.path() / "open";
  fs::create_directories(open / "ctl");
  ::chmod((open / "ctl").c_str(), 0700);
  ::chmod(open.c_str(), 0777);
  std::string e = refusal(open / "ctl");
  EXPECT_NE(e.find("lies under " + open.string() + ", which is writable by others without the sticky"),
            std::string::npos)
      << e;
  // Sticky, as /tmp is: only the owner of an entry may rename it.
  ::chmod(open.c_str(), 01777);
  EXPECT_EQ(refusal(open / "ctl"), "");
  // Through a symlinked parent, the real parent is what is checked.
  ::chmod(open.c_str(), 0777);
  fs::create_directory_symlink(open, t_.path() / "alias");
  EXPECT_NE(refusal(t_.path() / "alias" / "ctl").find("lies under " + open.string()),
            std::string::npos);

  if (::geteuid() != 0) return;
  // A parent owned by another (non-root) user.
  ::chmod(open.c_str(), 0755);
  ASSERT_EQ(::chown(open.c_str(), 65534, 65534), 0);
  e = refusal(open / "ctl");
  EXPECT_NE(e.find("lies under " + open.string() + ", which belongs to uid 65534"),
            std::string::npos)
      << e;
}

// FABTRAIN_CONTROL_DIR=/tmp/link/sub/ctl where /tmp/link is another user's link: mkdir follows
// links in every component but the last, so creating the missing parents first made root build
// directories wherever the link pointed. What exists is now checked before anything is made.
TEST_F(PrivateDirTest, NothingIsCreatedThroughAnotherUsersLink) {
  if (::geteuid() != 0) GTEST_SKIP() << "lchown to another uid needs root";
  const fs::path shared = t_.path() / "shared", target = t_.path() / "root-only";
  fs::create_directories(shared);
  fs::create_directories(target);
  ::chmod(shared.c_str(), 01777);  // as /tmp: anyone may add the link
  fs::create_directory_symlink(target, shared / "link");
  ASSERT_EQ(::lchown((shared / "link").c_str(), 65534, 65534), 0);
  const std::string e = refusal(shared / "link" / "sub" / "ctl", true);
  EXPECT_NE(e.find("is a symbolic link owned by uid 65534"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(target / "sub"));
  // Without missing parents the leaf's mkdir would go through the link too.
  const std::string leaf = refusal(shared / "link" / "ctl", true);
  EXPECT_NE(leaf.find("is a symbolic link owned by uid 65534"), std::string::npos) << leaf;
  EXPECT_FALSE(fs::exists(target / "ctl"));
}

}  // namespace
}  // namespace fabkit
