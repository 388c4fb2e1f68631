// Reads under a --sysroot tree stay inside it (common/root_open.h): links resolve as they would
// on the captured machine with the tree as `/`, only regular files are read, a loop is a refusal
// and not a throw; a path under no tree reads as it always did.
#include "common/root_open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "common/file_reader.h"
#include "common/roots.h"
#include "tests/support/ttar.h"

namespace fabkit {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSecret = "root-only-secret-7f3a";

// A read that blocks (the FIFO this file is about) ends the test binary instead of hanging it.
class Watchdog {
 public:
  explicit Watchdog(unsigned seconds) { ::alarm(seconds); }
  ~Watchdog() { ::alarm(0); }
};

class SysrootTree : public ::testing::Test {
 protected:
  void SetUp() override {
    roots_ = SystemRoots::under(dir_.path());
    secret_ = outside_.path() / "shadow";
    testing::write_file(secret_, std::string(kSecret) + "\n");
    ::chmod(secret_.c_str(), 0600);
    fs::create_directories(sys("class/net"));
  }
  fs::path sys(const std::string& rel) const { return dir_.path() / "sys" / rel; }
  bool refused(const fs::path& p, const std::string& why) const {
    for (const auto& r : roots_.tree->refusals())
      if (r.path == p.string() && r.reason.find(why) != std::string::npos) return true;
    return false;
  }

  testing::TempDir outside_{"sysroot-outside"};
  testing::TempDir dir_{"sysroot-tree"};
  SystemRoots roots_;
  fs::path secret_;
};

TEST_F(SysrootTree, ALinkOutOfTheTreeReadsNothingOutsideAndIsNamed) {
  fs::create_directories(sys("class/net/x"));
  // Absolute, and relative with more `..` than the tree is deep: both stay inside.
  fs::create_symlink(secret_, sys("class/net/x/operstate"));
  fs::create_symlink("../../../../../../../../../../.." + secret_.string(),
                     sys("class/net/x/address"));
  for (const char* name : {"operstate", "address"}) {
    const fs::path p = sys("class/net/x") / name;
    auto t = read_text(p);
    ASSERT_FALSE(ok(t)) << name << " read: " << value(t);
    EXPECT_EQ(error(t).err, ENOENT);
    EXPECT_EQ(error(t).object, p.string());
    EXPECT_FALSE(read_line(p)) << name;
    EXPECT_TRUE(refused(p, "leads to nothing inside " + dir_.path().string())) << name;
  }
  // A directory link out of the tree: not a directory of the tree, nothing listed through it.
  fs::create_symlink(outside_.path(), sys("class/net/y"));
  EXPECT_FALSE(path_is_directory(sys("class/net/y")));
  EXPECT_TRUE(list_dir(sys("class/net/y")).empty());
  EXPECT_FALSE(read_line(sys("class/net/y/shadow")));
}

TEST_F(SysrootTree, AnAbsoluteLinkResolvesInsideTheTreeAsOnTheCapturedMachine) {
  testing::write_file(sys("devices/virtual/net/eth7/mtu"), "4242\n");
  fs::create_symlink("/sys/devices/virtual/net/eth7", sys("class/net/eth7"));
  fs::create_symlink("../../devices/virtual/net/eth7", sys("class/net/eth8"));
  for (const char* name : {"eth7", "eth8"}) {
    EXPECT_TRUE(path_is_directory(sys("class/net") / name)) << name;
    EXPECT_EQ(read_int(sys("class/net") / name / "mtu"), 4242) << name;
    EXPECT_EQ(list_dir(sys("class/net") / name), std::vector<std::string>{"mtu"}) << name;
  }
  EXPECT_EQ(symlink_basename(sys("class/net/eth7")), "eth7");
  EXPECT_EQ(read_link(sys("class/net/eth7")), "/sys/devices/virtual/net/eth7");
  // `..` past the top stops at the tree's root, as it stops at / on the machine.
  EXPECT_EQ(read_int(dir_.path() / "sys/../../../../../sys/devices/virtual/net/eth7/mtu"), 4242);
  EXPECT_TRUE(roots_.tree->refusals().empty());
}

TEST_F(SysrootTree, AFifoIsRefusedAtOnceAndNamed) {
  Watchdog watchdog(10);
  fs::create_directories(sys("class/net/x"));
  ASSERT_EQ(::mkfifo(sys("class/net/x/operstate").c_str(), 0600), 0);
  auto t = read_text(sys("class/net/x/operstate"));
  ASSERT_FALSE(ok(t));
  EXPECT_NE(error(t).to_string().find("a FIFO"), std::string::npos) << error(t).to_string();
  EXPECT_FALSE(read_int(sys("class/net/x/operstate")));
  EXPECT_TRUE(refused(sys("class/net/x/operstate"), "a FIFO, not a regular file"));
  EXPECT_TRUE(std::holds_alternative<SysError>(open_for_reading(sys("class/net/x/operstate"))));
}

TEST_F(SysrootTree, ADeviceNodeIsRefusedWithoutBeingOpened) {
  if (::geteuid() != 0) GTEST_SKIP() << "mknod of a character device needs root";
  fs::create_directories(dir_.path() / "dev");
  // /dev/zero's numbers: read through, it would never end.
  ASSERT_EQ(::mknod((dir_.path() / "dev/kmsg").c_str(), S_IFCHR | 0600, makedev(1, 5)), 0);
  auto opened = open_for_reading(dir_.path() / "dev/kmsg", O_NONBLOCK);
  ASSERT_TRUE(std::holds_alternative<SysError>(opened));
  EXPECT_TRUE(refused(dir_.path() / "dev/kmsg", "a character device"));
}

TEST_F(SysrootTree, ASymlinkLoopIsARefusalNotAThrow) {
  fs::create_symlink("b", sys("class/net/a"));
  fs::create_symlink("a", sys("class/net/b"));
  EXPECT_FALSE(path_is_directory(sys("class/net/a")));
  EXPECT_FALSE(path_exists(sys("class/net/a")));
  EXPECT_TRUE(list_dir(sys("class/net/a")).empty());
  auto t = read_text(sys("class/net/a/mtu"));
  ASSERT_FALSE(ok(t));
  EXPECT_EQ(error(t).err, ELOOP);
  EXPECT_TRUE(refused(sys("class/net/a"), "symlink loop"));
  EXPECT_TRUE(refused(sys("class/net/a/mtu"), "symlink loop"));
  // list_dir still names both entries: the loop is in what they point to.
  EXPECT_EQ(list_dir(sys("class/net")), (std::vector<std::string>{"a", "b"}));
}

TEST_F(SysrootTree, TheRootStaysTheOneFirstOpened) {
  testing::write_file(sys("class/net/x/mtu"), "1500\n");
  EXPECT_EQ(read_int(sys("class/net/x/mtu")), 1500);
  // DIR swapped for a link to another tree after the first read: the reads keep the first tree.
  testing::TempDir other("sysroot-other");
  testing::write_file(other.path() / "sys/class/net/x/mtu", "9000\n");
  const fs::path moved = dir_.path().string() + ".moved";
  fs::rename(dir_.path(), moved);
  fs::create_symlink(other.path(), dir_.path());
  EXPECT_EQ(read_int(sys("class/net/x/mtu")), 1500);
  fs::remove(dir_.path());
  fs::rename(moved, dir_.path());
}

TEST_F(SysrootTree, ReadsStopAtTheirCap) {
  testing::write_file(sys("big"), std::string(3 << 20, 'a'));
  auto t = read_text(sys("big"));
  ASSERT_TRUE(ok(t));
  EXPECT_EQ(value(t).size(), size_t{1} << 20);  // read_text's default: a sysfs file is a page
  auto small = read_text(sys("big"), 4096);
  ASSERT_TRUE(ok(small));
  EXPECT_EQ(value(small).size(), 4096u);
}

TEST(SysrootTreeLifetime, APathUnderNoTreeReadsAsBefore) {
  testing::TempDir dir("sysroot-live");
  testing::TempDir target("sysroot-live-target");
  testing::write_file(target.path() / "value", "7\n");
  fs::create_symlink(target.path() / "value", dir.path() / "link");
  EXPECT_FALSE(tree_holding(dir.path() / "link"));
  EXPECT_EQ(read_int(dir.path() / "link"), 7);  // followed, as open(2) follows it
  {
    SystemRoots roots = SystemRoots::under(dir.path());
    EXPECT_TRUE(tree_holding(dir.path() / "link"));
    EXPECT_FALSE(read_int(dir.path() / "link"));  // inside the tree, the link leads nowhere
  }
  EXPECT_FALSE(tree_holding(dir.path() / "link"));
  EXPECT_EQ(read_int(dir.path() / "link"), 7);
  EXPECT_FALSE(SystemRoots::live_system("").tree);
}

TEST(SysrootTreeLifetime, TheSameDirectoryIsOneTree) {
  testing::TempDir dir("sysroot-same");
  SystemRoots a = SystemRoots::under(dir.path());
  SystemRoots b = SystemRoots::under(dir.path().string() + "/");
  EXPECT_EQ(a.tree, b.tree);
  EXPECT_EQ(a.tree->relative(dir.path() / "sys/x"), "sys/x");
  EXPECT_EQ(a.tree->relative(dir.path()), ".");
  EXPECT_FALSE(a.tree->relative(dir.path().parent_path() / "other"));
  // DIR/.. is DIR's neighbour, not the tree's; further down, `..` is the tree's own.
  EXPECT_FALSE(a.tree->relative(dir.path() / "../x.json"));
  EXPECT_EQ(a.tree->relative(dir.path() / "sys/../../x"), "sys/../../x");
}

TEST(SysrootTreeLifetime, ARelativeTreeHoldsItsAbsolutePathsAndNoOthers) {
  testing::TempDir dir("sysroot-rel");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path());
  fs::create_directories("capture/sys");
  {
    ConfinedTree here(".");
    EXPECT_EQ(here.relative("capture/sys"), "capture/sys");
    EXPECT_EQ(here.relative(dir.path() / "capture/sys"), "capture/sys");
    EXPECT_FALSE(here.relative("/etc/hostname"));  // not read as ./etc/hostname
    EXPECT_FALSE(here.relative("../x.json"));
    ConfinedTree capture("capture");
    EXPECT_EQ(capture.relative(dir.path() / "capture/sys/x"), "sys/x");
    EXPECT_EQ(capture.relative("./capture/sys"), "sys");
    EXPECT_FALSE(capture.relative(dir.path() / "other/sys"));
  }
  fs::current_path(cwd);
}

// The component walk (kernels before 5.6) against openat2 RESOLVE_IN_ROOT, path by path: the same
// file or the same errno.
class ResolveInRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path r = dir_.path();
    testing::write_file(r / "sys/devices/a/value", "1\n");
    testing::write_file(r / "etc/hostname", "captured\n");
    fs::create_directories(r / "sys/class");
    fs::create_symlink("/sys/devices/a", r / "sys/class/abs");
    fs::create_symlink("../devices/a", r / "sys/class/rel");
    fs::create_symlink("../../../../../../etc/hostname", r / "sys/class/up");
    fs::create_symlink("/", r / "sys/class/root");
    fs::create_symlink("missing", r / "sys/class/dangling");
    fs::create_symlink("loop2", r / "sys/class/loop1");
    fs::create_symlink("loop1", r / "sys/class/loop2");
    fs::create_symlink("/sys/devices/a/value", r / "sys/class/file");
    // chainN -> chainN-1 -> ... -> chain0 -> the file: N + 1 links to follow.
    fs::create_symlink("/sys/devices/a/value", r / "sys/class/chain0");
    for (int i = 1; i <= 40; ++i)
      fs::create_symlink("chain" + std::to_string(i - 1),
                         r / "sys/class" / ("chain" + std::to_string(i)));
    root_ = ::open(r.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(root_, 0);
  }
  void TearDown() override { ::close(root_); }

  // "ino:N" for a file found, "errno:N" otherwise.
  static std::string outcome(int fd) {
    if (fd < 0) return "errno:" + std::to_string(-fd);
    struct stat st {};
    ::fstat(fd, &st);
    ::close(fd);
    return "ino:" + std::to_string(st.st_ino);
  }
  std::string ino(const std::string& rel) const {
    struct stat st {};
    ::stat((dir_.path() / rel).c_str(), &st);
    return "ino:" + std::to_string(st.st_ino);
  }

  testing::TempDir dir_{"sysroot-resolve"};
  int root_ = -1;
};

TEST_F(ResolveInRoot, TheWalkResolvesAsTheTreeWereRoot) {
  const std::string value = ino("sys/devices/a/value");
  const std::string err_loop = "errno:" + std::to_string(ELOOP);
  const std::string err_noent = "errno:" + std::to_string(ENOENT);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sys/class/abs/value", value},
      {"sys/class/rel/value", value},
      {"sys/class/file", value},
      {"/sys/class/file", value},
      {"sys/class/up", ino("etc/hostname")},
      {"../../sys/devices/a/value", value},
      {"sys/class/root/etc/hostname", ino("etc/hostname")},
      {"sys/class/root/..", ino(".")},
      {"sys/class/dangling", err_noent},
      {"sys/class/loop1", err_loop},
      {"sys/class/loop1/x", err_loop},
      {"sys/class/chain38", value},  // 39 links + the one in chain0: 40, the most allowed
      {"sys/class/chain39", value},
      {"sys/class/chain40", err_loop},  // 41 links
      {"sys/devices/a/value/x", "errno:" + std::to_string(ENOTDIR)},
  };
  for (const auto& [rel, want] : cases) {
    EXPECT_EQ(outcome(open_in_root_by_walk(root_, rel, O_RDONLY)), want) << "walk: " << rel;
    EXPECT_EQ(outcome(open_in_root(root_, rel, O_RDONLY)), want) << "openat2: " << rel;
  }
}

}  // namespace
}  // namespace fabkit
