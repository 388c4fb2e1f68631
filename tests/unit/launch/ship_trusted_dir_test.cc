// fabcheck --ship's receiving programs refuse a directory another user could swap (issue #36): the
// copy is written, hashed, chmodded and run by path, so another user who can rename the private
// directory (or one above it) can make root run their program, or write through their symlink.
// The receivers run for real on this machine, as on a host (a template launcher), against
// directories owned by uid 65534 or open to others; the attacks themselves run as uid 65534 in a
// forked child. To make the race deterministic, the test puts a hook first on the receiver's PATH
// in place of mktemp or sha256sum: it runs the real program, hands the path to the attacker, and
// waits until the attacker has swapped the directory (the red team won the same race unaided in
// 4 of 4 runs). Also: the default base directory survives ssh's joining of its remote words.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/errors.h"
#include "common/json_read.h"
#include "fabric/launch/child_process.h"
#include "fabric/launch/ship.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::launch {
namespace {

namespace fs = std::filesystem;

// Stands for fabcheck on the host: prints its arguments, the rest of its stdin (the token) and
// the private directory the receiver named.
const char* const kFakeBinary =
    "#!/bin/sh\n"
    "read -r token\n"
    "echo \"ran args=$* token=$token dir=$FABKIT_SHIPPED_DIR\"\n";

constexpr uid_t kOtherUid = 65534;

struct Received {
  int exit_code = -1;
  std::string out;
};

void write_file(const fs::path& p, const std::string& text, mode_t mode) {
  std::ofstream(p) << text;
  ASSERT_EQ(::chmod(p.c_str(), mode), 0) << p;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Received run_child(const std::vector<std::string>& argv, std::shared_ptr<const std::string> payload,
                   std::optional<std::vector<std::string>> env = std::nullopt) {
  ChildOptions o;
  o.argv = argv;
  o.search_path = true;
  o.stdout_is_log = true;
  o.stderr_into_stdout = true;
  o.stdin_payload = std::move(payload);
  o.stdin_text = "the-token\n";
  o.env = std::move(env);
  ChildProcess c(o);
  c.wait_exit(wire::deadline_in_ms(20000));
  Received r;
  r.exit_code = WIFEXITED(c.exit_status()) ? WEXITSTATUS(c.exit_status()) : -1;
  r.out = c.log();
  return r;
}

// The receiver's first JSON line, as the controller reads it.
std::optional<ShipFailure> failure_in(const std::string& out) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] == '{')
      return parse_ship_failure(parse_json(line, "receiver line"));
  return std::nullopt;
}

class ShipTrustedDir : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (to act as uid 65534 and chown to it)";
    char tmpl[] = "/tmp/fabkit-ship-trust-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    // Reachable by the other user (as a user's home is), writable by root only.
    ASSERT_EQ(::chmod(base_.c_str(), 0755), 0);
    binary_ = base_ / "fabcheck";
    write_file(binary_, kFakeBinary, 0755);
    ship_dir_ = base_ / "hosts";
    fs::create_directory(ship_dir_);
  }
  void TearDown() override {
    if (attacker_ > 0) {
      ::kill(attacker_, SIGKILL);  // still waiting for a path that a fixed receiver never sent
      ::waitpid(attacker_, nullptr, 0);
    }
    if (!base_.empty()) fs::remove_all(base_);
  }

  // The stdin receiver as a template launch would run it, with `path_prefix` first on PATH.
  Received receive(const std::string& path_prefix = "") {
    std::string launcher = "env FABKIT_TEST_HOST={host}";
    if (!path_prefix.empty())
      launcher = "env PATH=" + path_prefix + ":/usr/bin:/bin FABKIT_TEST_HOST={host}";
    LauncherSpec spec = parse_launcher(launcher, 5);
    Shipment ship(read_ship_binary(binary_.string()), spec, ship_dir_.string(), 5000);
    RemoteCommand cmd = remote_fabcheck(spec, "", &ship, "h1", {"agent", "--name", "h1"});
    return run_child(cmd.argv, cmd.stdin_payload);
  }

  // A hook named `name` (mktemp or sha256sum) in a directory of its own: it runs the real one,
  // writes its output (the private directory, or its checksum line) to the FIFO `go` and waits
  // for a line on `done` before passing the output on. The FIFOs are open to the attacker.
  fs::path make_hook(const std::string& name) {
    hooks_ = base_ / "hooks";
    fs::create_directory(hooks_);
    for (const char* fifo : {"go", "done"}) {
      EXPECT_EQ(::mkfifo((hooks_ / fifo).c_str(), 0666), 0);
      EXPECT_EQ(::chmod((hooks_ / fifo).c_str(), 0666), 0);
    }
    write_file(hooks_ / name,
               "#!/bin/sh\nout=$(/usr/bin/" + name + " \"$@\") || exit 1\necho \"$out\" >" +
                   (hooks_ / "go").string() + "\nread -r x <" + (hooks_ / "done").string() +
                   "\necho \"$out\"\n",
               0755);
    return hooks_;
  }

  // Forks the attacker, uid 65534: reads the private directory's path from `go` (sha256sum's
  // output is "HASH  PATH/fabcheck"), renames root's directory away, puts a directory of its own
  // in its place holding `fabcheck` (a program when link_to is empty, else a symlink to link_to),
  // then writes `done`.
  void start_attacker(const std::string& program, const fs::path& link_to) {
    const std::string go = (hooks_ / "go").string(), done = (hooks_ / "done").string();
    attacker_ = ::fork();
    ASSERT_GE(attacker_, 0);
    if (attacker_ != 0) return;
    ::alarm(60);
    if (::setgroups(0, nullptr) != 0 || ::setgid(kOtherUid) != 0 || ::setuid(kOtherUid) != 0)
      ::_exit(10);
    int in = ::open(go.c_str(), O_RDONLY);
    char buf[4096] = {};
    ssize_t n = in < 0 ? -1 : ::read(in, buf, sizeof buf - 1);
    if (n <= 0) ::_exit(11);
    std::string line(buf, static_cast<size_t>(n));
    line = line.substr(0, line.find('\n'));
    if (line.find("  ") != std::string::npos) line = line.substr(line.find("  ") + 2);
    const std::string dir = line.size() > 9 && line.compare(line.size() - 9, 9, "/fabcheck") == 0
                                ? line.substr(0, line.size() - 9)
                                : line;
    if (::rename(dir.c_str(), (dir + ".roots").c_str()) != 0) ::_exit(12);
    if (::mkdir(dir.c_str(), 0755) != 0) ::_exit(13);
    const std::string copy = dir + "/fabcheck";
    if (link_to.empty()) {
      int fd = ::open(copy.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0755);
      if (fd < 0 || ::write(fd, program.data(), program.size()) != ssize_t(program.size()))
        ::_exit(14);
      ::close(fd);
    } else if (::symlink(link_to.c_str(), copy.c_str()) != 0) {
      ::_exit(15);
    }
    int out = ::open(done.c_str(), O_WRONLY);
    if (out < 0 || ::write(out, "x\n", 2) != 2) ::_exit(16);
    ::_exit(0);
  }

  fs::path base_, ship_dir_, binary_, hooks_;
  pid_t attacker_ = 0;
};

void expect_unsafe_dir(const Received& r, const fs::path& dir) {
  EXPECT_EQ(r.exit_code, kShipExitFailed) << r.out;
  EXPECT_EQ(r.out.find("ran args="), std::string::npos) << "the copy ran: " << r.out;
  auto f = failure_in(r.out);
  ASSERT_TRUE(f) << r.out;
  EXPECT_EQ(f->code, "pair.ship_unsafe_dir") << f->message;
  EXPECT_NE(f->message.find(dir.string() + " "), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("--ship-dir"), std::string::npos) << f->message;  // the fix
  EXPECT_NE(f->message.find("nothing was run"), std::string::npos) << f->message;
}

TEST_F(ShipTrustedDir, ABaseDirectoryAnotherUserOwnsIsRefusedBeforeAnythingIsWritten) {
  ASSERT_EQ(::chown(ship_dir_.c_str(), kOtherUid, kOtherUid), 0);
  Received r = receive();
  expect_unsafe_dir(r, ship_dir_);
  auto f = failure_in(r.out);
  ASSERT_TRUE(f);
  EXPECT_NE(f->message.find("belongs to uid 65534"), std::string::npos) << f->message;
  EXPECT_TRUE(fs::is_empty(ship_dir_));  // the private directory made before the check is gone
}

TEST_F(ShipTrustedDir, ABaseDirectoryOthersMayWriteWithoutTheStickyBitIsRefused) {
  ASSERT_EQ(::chmod(ship_dir_.c_str(), 0777), 0);
  Received r = receive();
  expect_unsafe_dir(r, ship_dir_);
  auto f = failure_in(r.out);
  ASSERT_TRUE(f);
  EXPECT_NE(f->message.find("mode 0777"), std::string::npos) << f->message;
  EXPECT_TRUE(fs::is_empty(ship_dir_));
}

TEST_F(ShipTrustedDir, ADirectoryAnotherUserOwnsHigherUpIsRefusedToo) {
  // The other user cannot touch hosts/ itself, but can rename it away inside their own directory.
  fs::path theirs = base_ / "theirs";
  fs::create_directory(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), kOtherUid, kOtherUid), 0);
  ship_dir_ = theirs / "hosts";
  fs::create_directory(ship_dir_);
  Received r = receive();
  expect_unsafe_dir(r, theirs);
}

// Guards the rule's other side (passes before the fix as after): a sticky directory open to all,
// as /tmp is, only lets each user rename their own entries, so it is fine above the private one.
TEST_F(ShipTrustedDir, AStickyDirectoryOpenToAllAsTmpIsStillUsed) {
  ASSERT_EQ(::chmod(ship_dir_.c_str(), 01777), 0);
  Received r = receive();
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ran args=agent --name h1 token=the-token dir=" + ship_dir_.string() +
                       "/fabcheck-ship."),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::is_empty(ship_dir_));
}

TEST_F(ShipTrustedDir, AnotherUserSwappingThePrivateDirectoryAfterTheChecksumRunsNothingOfTheirs) {
  ASSERT_EQ(::chown(ship_dir_.c_str(), kOtherUid, kOtherUid), 0);  // e.g. --ship-dir ~user/tmp
  const fs::path hooks = make_hook("sha256sum");
  const fs::path marker = hooks / "swapped-program-ran";
  start_attacker("#!/bin/sh\nid -u >" + marker.string() + "\n", "");
  Received r = receive(hooks.string());
  EXPECT_FALSE(fs::exists(marker))
      << "the other user's program ran as uid " << read_file(marker) << r.out;
  expect_unsafe_dir(r, ship_dir_);
}

TEST_F(ShipTrustedDir, AnotherUserPointingTheCopyAtARootFileGetsItNeitherWrittenNorRun) {
  ASSERT_EQ(::chown(ship_dir_.c_str(), kOtherUid, kOtherUid), 0);
  const fs::path hooks = make_hook("mktemp");
  const fs::path victim = hooks / "root-only";  // stands for /etc/shadow
  write_file(victim, "root:secret\n", 0600);
  start_attacker("", victim);
  Received r = receive(hooks.string());
  EXPECT_EQ(read_file(victim), "root:secret\n") << "root wrote through the other user's symlink";
  struct stat st {};
  ASSERT_EQ(::stat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // The swapped-in directory itself is what the check finds first.
  auto f = failure_in(r.out);
  ASSERT_TRUE(f) << r.out;
  EXPECT_EQ(f->code, "pair.ship_unsafe_dir") << f->message;
  EXPECT_EQ(r.out.find("ran args="), std::string::npos) << r.out;
}

// kSbcast: the copy sbcast wrote is checked and run by the file receiver; the directory is made
// and checked by make_dir_script before sbcast writes.
TEST_F(ShipTrustedDir, TheSbcastStepsRefuseADirectoryAnotherUserCouldSwap) {
  ASSERT_EQ(::chown(ship_dir_.c_str(), kOtherUid, kOtherUid), 0);
  const fs::path priv = ship_dir_ / "fabcheck-ship.7.0123456789abcdef";
  Received made = run_child({"sh", "-c", make_dir_script(), "fabcheck-ship-mkdir", priv}, nullptr);
  expect_unsafe_dir(made, ship_dir_);

  // A copy already there (say, made before the directory's owner changed) is not run either.
  fs::create_directory(priv);
  ASSERT_EQ(::chmod(priv.c_str(), 0700), 0);
  fs::copy_file(binary_, priv / "fabcheck");
  const std::string sha = read_ship_binary(binary_.string()).sha256_hex;
  Received r = run_child(
      {"sh", "-c", file_receiver_script(), "fabcheck-ship", sha, priv / "fabcheck", "agent"},
      nullptr);
  expect_unsafe_dir(r, ship_dir_);

  // The same steps in a directory only root can change make the directory and run the copy.
  ASSERT_EQ(::chown(ship_dir_.c_str(), 0, 0), 0);
  const fs::path fresh = ship_dir_ / "fabcheck-ship.7.fedcba9876543210";
  Received ok = run_child({"sh", "-c", make_dir_script(), "fabcheck-ship-mkdir", fresh}, nullptr);
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  struct stat st {};
  ASSERT_EQ(::lstat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  fs::copy_file(binary_, fresh / "fabcheck");
  Received ran = run_child(
      {"sh", "-c", file_receiver_script(), "fabcheck-ship", sha, fresh / "fabcheck", "agent"},
      nullptr);
  EXPECT_EQ(ran.exit_code, 0) << ran.out;
  EXPECT_NE(ran.out.find("ran args=agent token=the-token dir=" + fresh.string()), std::string::npos)
      << ran.out;
}

TEST_F(ShipTrustedDir, ASymlinkInTheSbcastPathIsRefusedNotFollowed) {
  // sbcast and every launch use the path as given, so a link someone could re-point is refused.
  fs::create_directory_symlink(ship_dir_, base_ / "link");
  Received made = run_child(
      {"sh", "-c", make_dir_script(), "fabcheck-ship-mkdir", base_ / "link" / "fabcheck-ship.1.ab"},
      nullptr);
  expect_unsafe_dir(made, base_ / "link");
  auto f = failure_in(made.out);
  ASSERT_TRUE(f);
  EXPECT_NE(f->message.find("symbolic link"), std::string::npos) << f->message;
}

// ssh joins its remote words with spaces for the remote shell (`sh -c "$*"` on the host), where an
// empty word vanishes: with no --ship-dir the receiver then read fabcheck's first argument as its
// base directory, mktemp failed, and the run waited out its 60 s hello timeout. A stand-in `ssh`
// in place of the real one does exactly that joining, locally; the real sshd case is tested in
// tests/integration/ssh.
TEST_F(ShipTrustedDir, TheDefaultBaseDirectoryCrossesSshsJoiningOfItsWords) {
  const fs::path bin = base_ / "bin";
  fs::create_directory(bin);
  write_file(bin / "ssh",
             "#!/bin/sh\nwhile [ \"$1\" != -- ]; do shift; done; shift 2\nexec sh -c \"$*\"\n",
             0755);
  fs::path tmpdir = base_ / "host-tmp";  // the host's $TMPDIR: where the default puts the copy
  fs::create_directory(tmpdir);
  LauncherSpec spec = parse_launcher("ssh", 5);
  Shipment ship(read_ship_binary(binary_.string()), spec, "", 5000);
  RemoteCommand cmd = remote_fabcheck(spec, "", &ship, "h1", {"agent", "--name", "h1"});
  for (const auto& w : cmd.argv) EXPECT_FALSE(w.empty()) << "an empty word that ssh would drop";
  ASSERT_EQ(cmd.argv[0], "ssh");
  cmd.argv[0] = (bin / "ssh").string();
  Received r =
      run_child(cmd.argv, cmd.stdin_payload,
                std::vector<std::string>{"PATH=/usr/bin:/bin", "TMPDIR=" + tmpdir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ran args=agent --name h1 token=the-token dir=" + tmpdir.string() +
                       "/fabcheck-ship."),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::is_empty(tmpdir));
}

TEST(ShipFailureLine, UnsafeDirNamesTheHostTheDirectoryAndTheFix) {
  auto f = parse_ship_failure(Json{{"fabkit_ship_error", "unsafe_dir"},
                                   {"host", "node07"},
                                   {"private_dir", "/home/u/s/fabcheck-ship.abc"},
                                   {"dir", "/home/u/s"},
                                   {"problem", "foreign_owner"},
                                   {"owner_uid", "1001"},
                                   {"mode", "0755"},
                                   {"uid", "0"}});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, "pair.ship_unsafe_dir");
  for (const char* part : {"node07", "/home/u/s/fabcheck-ship.abc", "/home/u/s belongs to uid 1001",
                           "--ship-dir that only root (or uid 0)", "/tmp", "nothing was run"})
    EXPECT_NE(f->message.find(part), std::string::npos) << part << " in " << f->message;
}

}  // namespace
}  // namespace fabkit::launch
