// Issue #19, item 1: another local user must not be able to make `fabtrain control cleanup`
// (often run as root) delete a file of their choosing, nor put escape sequences on the terminal
// of whoever runs `control list`.
//
// The attack as reported: the attacker creates /tmp/fabtrain-0 first, as a symlink to a
// world-writable directory of theirs holding x.json = {"job":"x","pid":999997,"host":<this host>,
// "socket":"/any/file"}; root runs cleanup and /any/file is gone. The root tests stage exactly
// that at the real path /tmp/fabtrain-<uid>, in a child with its own mount namespace whose /tmp is
// a directory of the test (bind mount), so a developer's real /tmp/fabtrain-0 is never touched.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "tests/support/ttar.h"
#include "tests/unit/trainer_control/control_test_util.h"
#include "trainer/control/control_client.h"
#include "trainer/control/control_server.h"
#include "trainer/control/endpoint.h"

namespace fabkit::trainer::control {
namespace {
namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The registration the report describes, naming `victim` as its socket.
std::string hostile_registration(const std::string& victim) {
  return Json{{"job", "x"}, {"pid", 999997}, {"host", this_host()}, {"socket", victim}}.dump();
}

void write_owned(const fs::path& p, const std::string& text, uid_t uid, mode_t mode) {
  fabkit::testing::write_file(p, text);
  ASSERT_EQ(::chown(p.c_str(), uid, uid), 0) << p;
  ASSERT_EQ(::chmod(p.c_str(), mode), 0) << p;
}

struct Result {
  int exit_code = -1;
  std::string out, err;
};

// Runs `fabtrain control <command>` (run_control, with an empty environment: no
// FABTRAIN_CONTROL_DIR, no XDG_RUNTIME_DIR, so /tmp/fabtrain-<uid> is the directory) in a child
// whose /tmp is `fake_tmp`, after `stage` (run in the child, as root) has set /tmp up.
Result run_with_private_tmp(const fs::path& fake_tmp, const std::string& command,
                            const std::function<void()>& stage) {
  fs::create_directories(fake_tmp);
  const fs::path result_file = fake_tmp / "result.json";
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0) ::_exit(20);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ::_exit(21);
    if (::mount(fake_tmp.c_str(), "/tmp", nullptr, MS_BIND, nullptr) != 0) ::_exit(22);
    if (::chmod("/tmp", 01777) != 0) ::_exit(23);  // what /tmp is: world-writable, sticky
    stage();
    const ControlOutcome o = run_control({command, ""}, Environment());
    const std::string doc = Json{{"exit_code", o.exit_code}, {"out", o.out}, {"err", o.err}}.dump();
    std::ofstream("/tmp/result.json") << doc;
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  Result r;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    r.err = "child failed: status " + std::to_string(status);
    return r;
  }
  const Json j = Json::parse(slurp(result_file));
  r.exit_code = j["exit_code"];
  r.out = j["out"];
  r.err = j["err"];
  return r;
}

class AttackAsRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0)
      GTEST_SKIP() << "stages another user's files and a private /tmp: needs root";
    // The file the attacker wants gone, somewhere only root can write (as seen from the child).
    fs::create_directories(tmp_ / "root-only");
    ::chmod((tmp_ / "root-only").c_str(), 0700);
    fabkit::testing::write_file(tmp_ / "root-only" / "precious", "precious\n");
  }
  void expect_refused(const Result& r, const std::string& problem) {
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("control directory /tmp/fabtrain-0 "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(problem), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("set FABTRAIN_CONTROL_DIR to a directory of your own"), std::string::npos)
        << r.err;
    EXPECT_EQ(slurp(tmp_ / "root-only" / "precious"), "precious\n") << "the victim was deleted";
  }
  fabkit::testing::TempDir dir_{"ctl_attack"};
  const fs::path tmp_ = dir_.path() / "tmp";  // the child's /tmp
  const std::string victim_ = "/tmp/root-only/precious";
};

TEST_F(AttackAsRoot, SymlinkedTmpDirDoesNotMakeCleanupDeleteTheVictim) {
  for (const char* command : {"cleanup", "list"}) {
    const Result r = run_with_private_tmp(tmp_, command, [&] {
      ::mkdir("/tmp/evil", 0777);
      ::chmod("/tmp/evil", 0777);
      ::chown("/tmp/evil", kNobody, kNobody);
      write_owned("/tmp/evil/x.json", hostile_registration(victim_), kNobody, 0644);
      ::unlink("/tmp/fabtrain-0");
      ::symlink("/tmp/evil", "/tmp/fabtrain-0");
      ::lchown("/tmp/fabtrain-0", kNobody, kNobody);
    });
    SCOPED_TRACE(command);
    expect_refused(r, "is a symbolic link (to /tmp/evil)");
    EXPECT_NE(r.err.find("`rm /tmp/fabtrain-0`"), std::string::npos) << r.err;
  }
}

TEST_F(AttackAsRoot, DirectoryOfAnotherUserIsRefused) {
  const Result r = run_with_private_tmp(tmp_, "cleanup", [&] {
    ::mkdir("/tmp/fabtrain-0", 0755);
    write_owned("/tmp/fabtrain-0/x.json", hostile_registration(victim_), kNobody, 0644);
    ::chown("/tmp/fabtrain-0", kNobody, kNobody);
  });
  expect_refused(r, "belongs to uid 65534, not to this user (uid 0)");
}

TEST_F(AttackAsRoot, GroupOrWorldWritableDirectoryIsRefused) {
  for (mode_t mode : {0777, 0770, 01777}) {
    const Result r = run_with_private_tmp(tmp_, "cleanup", [&] {
      ::mkdir("/tmp/fabtrain-0", 0700);
      ::chmod("/tmp/fabtrain-0", mode);
      write_owned("/tmp/fabtrain-0/x.json", hostile_registration(victim_), kNobody, 0644);
    });
    SCOPED_TRACE(mode);
    expect_refused(r, (mode & S_IWOTH) ? "is writable by others" : "is writable by its group");
    EXPECT_NE(r.err.find("chmod 700 /tmp/fabtrain-0"), std::string::npos) << r.err;
    fs::remove_all(tmp_ / "fabtrain-0");
  }
}

// The same holes through the other two directories, without root: a symlink is refused whoever
// runs the command.
TEST(ControlDirAttack, SymlinkedControlDirIsRefusedEverywhere) {
  testing::TempDir t("ctl_symlink");
  const fs::path victim = t.path() / "victim";
  fabkit::testing::write_file(victim, "precious\n");
  fs::create_directories(t.path() / "evil");
  ::chmod((t.path() / "evil").c_str(), 0777);
  fabkit::testing::write_file(t.path() / "evil" / "x.json", hostile_registration(victim.string()));
  fs::create_directories(t.path() / "xdg");
  ::chmod((t.path() / "xdg").c_str(), 0700);
  fs::create_directory_symlink(t.path() / "evil", t.path() / "ctl");
  fs::create_directory_symlink(t.path() / "evil", t.path() / "xdg" / "fabtrain");

  const Environment explicit_dir = env_with_dir(t.path() / "ctl");
  const Environment xdg({{"XDG_RUNTIME_DIR", (t.path() / "xdg").string()}});
  for (const Environment* env : {&explicit_dir, &xdg}) {
    for (const char* command : {"cleanup", "list"}) {
      const ControlOutcome o = run_control({command, ""}, *env);
      SCOPED_TRACE(command);
      EXPECT_EQ(o.exit_code, 2) << o.out << o.err;
      EXPECT_NE(o.err.find("is a symbolic link"), std::string::npos) << o.err;
      EXPECT_EQ(slurp(victim), "precious\n") << "the victim was deleted";
    }
  }
  // The job side refuses it too (and trains on without a socket, run_monitor.cc).
  EXPECT_THROW(ControlServer({"run1", t.path() / "ctl", t.path() / "out"}), UsageError);
}

// In the user's own private directory, a registration still cannot point a delete elsewhere: the
// socket cleanup removes is always <dir>/<job>.sock, and only when it is a socket.
TEST(ControlDirAttack, RegistrationCannotNameASocketOutsideItsDirectory) {
  testing::TempDir t("ctl_elsewhere");
  const fs::path dir = t.path() / "ctl";
  open_control_dir(dir, true);
  const fs::path victim = t.path() / "victim";
  fabkit::testing::write_file(victim, "precious\n");
  write_file_atomically(dir / "x.json", hostile_registration(victim.string()), 0600);
  // y: its socket named by a path ending in y.sock elsewhere; the y.sock here is a symlink to
  // the victim. z.sock here is a regular file. None of them is a socket: all are left alone.
  write_file_atomically(
      dir / "y.json",
      Json{{"job", "y"}, {"pid", 999997}, {"host", this_host()}, {"socket", "/elsewhere/y.sock"}}
          .dump(),
      0600);
  fs::create_symlink(victim, dir / "y.sock");
  write_file_atomically(
      dir / "z.json",
      Json{{"job", "z"}, {"pid", 999997}, {"host", this_host()}, {"socket", (dir / "z.sock")}}
          .dump(),
      0600);
  fabkit::testing::write_file(dir / "z.sock", "not a socket\n");

  const ControlOutcome c = run_control({"cleanup", ""}, env_with_dir(dir));
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(slurp(victim), "precious\n") << "the victim was deleted";
  EXPECT_TRUE(fs::exists(dir / "x.json"));  // not a job: a person should look at it
  EXPECT_NE(c.err.find("x.json: its socket is not x.sock in this directory"), std::string::npos)
      << c.err;
  EXPECT_TRUE(fs::is_symlink(dir / "y.sock"));
  EXPECT_NE(c.err.find("y.sock is not a socket: left alone"), std::string::npos) << c.err;
  EXPECT_EQ(slurp(dir / "z.sock"), "not a socket\n");
  EXPECT_NE(c.err.find("z.sock is not a socket: left alone"), std::string::npos) << c.err;
}

// `control list` shows a registration's strings; it must not hand their escape sequences to the
// terminal (here: set the window title, clear the screen).
TEST(ControlDirAttack, ListShowsEscapesInsteadOfSendingThem) {
  testing::TempDir t("ctl_escapes");
  const fs::path dir = t.path() / "ctl";
  open_control_dir(dir, true);
  const std::string evil =
      "\x1b]0;pwned\x07\x1b[2J\xc2\x9b"
      "31m\xe2\x80\xae";
  write_file_atomically(dir / "x.json",
                        Json{{"job", "x"},
                             {"pid", 999997},
                             {"host", "node-" + evil},
                             {"socket", (dir / "x.sock").string()},
                             {"output_dir", "/out/" + evil}}
                            .dump(),
                        0600);
  const ControlOutcome l = run_control({"list", ""}, env_with_dir(dir));
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(l.out.find('\x1b'), std::string::npos) << l.out;
  EXPECT_EQ(l.out.find('\x07'), std::string::npos) << l.out;
  EXPECT_EQ(l.out.find("\xc2\x9b"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("/out/\\x1b]0;pwned\\x07\\x1b[2J\\u009b31m\\u202e"), std::string::npos)
      << l.out;
  // --json carries the strings as they are (JSON escapes them; a program decides).
  const ControlOutcome j = run_control({"list", "", true}, env_with_dir(dir));
  EXPECT_EQ(Json::parse(j.out)["jobs"][0]["output_dir"], "/out/" + evil);
}

}  // namespace
}  // namespace fabkit::trainer::control
