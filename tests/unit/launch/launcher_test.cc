// Launcher templating: argv without a shell, rejection of anything that would need one, host-name
// checks against option injection.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <memory>

#include "common/errors.h"
#include "fabric/launch/child_process.h"
#include "fabric/launch/launcher.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::launch {
namespace {

using V = std::vector<std::string>;

TEST(Launcher, SshIsTheDefaultWithBatchModeAndConnectTimeout) {
  auto s = parse_launcher("", 7);
  EXPECT_EQ(s.kind, LauncherKind::kSsh);
  EXPECT_EQ(launcher_argv(s, "node01", {"/opt/fabcheck", "agent"}),
            (V{"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=7", "--", "node01",
               "/opt/fabcheck", "agent"}));
}

TEST(Launcher, SshKeepsAnEmptyWordAsAnEmptyArgument) {
  // ssh joins its remote words with spaces for the remote shell, where a bare empty word vanishes.
  auto s = parse_launcher("ssh", 7);
  EXPECT_EQ(launcher_argv(s, "node01", {"/opt/fabcheck", "", "x"}),
            (V{"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=7", "--", "node01",
               "/opt/fabcheck", "''", "x"}));
  // Launchers that pass argv on unjoined keep it as it is.
  EXPECT_EQ(launcher_argv(parse_launcher("srun", 7), "n", {"a", ""}).back(), "");
  EXPECT_EQ(launcher_argv(parse_launcher("env H={host}", 7), "n", {"a", ""}).back(), "");
}

TEST(Launcher, SrunRunsOneTaskOnTheNamedNode) {
  auto s = parse_launcher("srun", 10);
  EXPECT_EQ(launcher_argv(s, "gpu-3", {"fabcheck", "agent"}),
            (V{"srun", "-w", "gpu-3", "-N1", "-n1", "--quiet", "fabcheck", "agent"}));
}

TEST(Launcher, TemplateSubstitutesHostInEveryWordAndSplitsOnBlanks) {
  auto s = parse_launcher("ip  netns exec\t{host}", 10);
  EXPECT_EQ(launcher_argv(s, "fk-a", {"/bin/fabcheck", "agent"}),
            (V{"ip", "netns", "exec", "fk-a", "/bin/fabcheck", "agent"}));
  auto d = parse_launcher("docker exec -i --user=u {host}", 10);
  EXPECT_EQ(launcher_argv(d, "c1", {"fabcheck"}),
            (V{"docker", "exec", "-i", "--user=u", "c1", "fabcheck"}));
  auto n = parse_launcher("nsenter --net=/var/run/netns/{host} --", 10);
  EXPECT_EQ(launcher_argv(n, "h", {"x"})[1], "--net=/var/run/netns/h");
}

TEST(Launcher, TemplatesThatNeedAShellAreRejectedNamingTheCharacter) {
  for (const char* t : {"ssh {host} | tee log", "ip netns exec {host}; rm -rf /", "sh -c '{host}'",
                        "docker exec $C {host}", "env X=\"a b\" {host}", "run {host} > out",
                        "a `b` {host}", "x {host} && y", "x {host}\ny"}) {
    try {
      parse_launcher(t, 10);
      ADD_FAILURE() << "accepted: " << t;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("needs a shell"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_launcher("ip netns exec", 10), UsageError);           // no {host}
  EXPECT_THROW(parse_launcher("exec {hostname} {host}", 10), UsageError);  // unknown placeholder
}

TEST(Launcher, HostNamesCannotBeOptionsOrShellWords) {
  auto s = parse_launcher("ssh", 10);
  EXPECT_THROW(launcher_argv(s, "-oProxyCommand=evil", {"fabcheck"}), UsageError);
  EXPECT_THROW(launcher_argv(s, "a;b", {"fabcheck"}), UsageError);
  EXPECT_THROW(launcher_argv(s, "", {"fabcheck"}), UsageError);
  EXPECT_NO_THROW(launcher_argv(s, "node-01.cluster_a", {"fabcheck"}));
  EXPECT_NO_THROW(launcher_argv(s, "198.18.0.1", {"fabcheck"}));
  // ssh hands the remote words to a shell: the agent path must be inert.
  EXPECT_THROW(launcher_argv(s, "n1", {"/opt/my fabcheck"}), UsageError);
  EXPECT_THROW(launcher_argv(s, "n1", {"/opt/$(x)/fabcheck"}), UsageError);
}

ChildOptions agent_like(std::vector<std::string> argv, const std::string& token) {
  ChildOptions o;
  o.argv = std::move(argv);
  o.search_path = true;
  o.own_process_group = true;
  o.stdin_text = token + "\n";
  return o;
}

using Stream = ChildProcess::Stream;

TEST(ChildProcess, TokenArrivesOnStdinAndStdoutIsReadWithADeadline) {
  ChildProcess c(agent_like({"sh", "-c", "read t; echo got:$t; sleep 5"}, "tok123"));
  EXPECT_EQ(c.read_line(Stream::kStdout, wire::deadline_in_ms(3000)), "got:tok123");
  auto t0 = wire::Clock::now();
  try {
    c.read_line(Stream::kStdout, wire::deadline_in_ms(200));  // nothing more: timeout
    ADD_FAILURE() << "a line from a silent child";
  } catch (const wire::WireError& e) {
    EXPECT_EQ(e.kind(), wire::WireErrorKind::kTimeout) << e.what();
  }
  auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(wire::Clock::now() - t0).count();
  EXPECT_GE(waited, 200);
  EXPECT_LT(waited, 1500);
  c.stop(500);
  EXPECT_TRUE(c.exited());
  EXPECT_EQ(c.describe_exit(), "killed by signal 15");
}

TEST(ChildProcess, StdinIsClosedAfterTheTokenUnlessKeptOpen) {
  ChildProcess c(agent_like({"sh", "-c", "read t; cat; echo eof-after:$t"}, "tok"));
  EXPECT_EQ(c.read_line(Stream::kStdout, wire::deadline_in_ms(3000)), "eof-after:tok");
  EXPECT_THROW(c.write_stdin("more\n", wire::deadline_in_ms(100)), wire::WireError);
}

TEST(ChildProcess, StderrOfAFailedLauncherIsKept) {
  ChildProcess c(agent_like(
      {"sh", "-c", "echo 'ssh: connect to host x port 22: No route to host' >&2; exit 255"}, "t"));
  try {
    c.read_line(Stream::kStdout, wire::deadline_in_ms(3000));
    ADD_FAILURE() << "a line from a child that printed none";
  } catch (const wire::WireError& e) {
    EXPECT_EQ(e.kind(), wire::WireErrorKind::kClosed) << e.what();
  }
  EXPECT_EQ(c.wait_exit(wire::deadline_in_ms(3000)), "exit status 255");
  EXPECT_NE(c.stderr_tail().find("No route to host"), std::string::npos);
}

TEST(ChildProcess, MissingLauncherBinaryIsASysError) {
  EXPECT_THROW(ChildProcess(agent_like({"/nonexistent/launcher-xyz", "a"}, "t")),
               SysErrorException);
  ChildOptions o;
  o.argv = {"no-such-program-on-path-xyz"};
  o.search_path = true;
  try {
    ChildProcess c(o);
    FAIL() << "started a program that does not exist";
  } catch (const SysErrorException& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-program-on-path-xyz"), std::string::npos)
        << e.what();
  }
}

// The NCCL runner's shape: protocol lines on fd 3, stdout and stderr merged into a log that is
// drained while we wait (so a child writing more than a pipe holds never blocks), stdin kept open.
ChildOptions runner_like(const std::string& script) {
  ChildOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.env = std::vector<std::string>{"PATH=/usr/bin:/bin", "ONLY_THIS=1"};
  o.keep_stdin_open = true;
  o.stdout_is_log = true;
  o.stderr_into_stdout = true;
  o.control_fd = true;
  o.stop_grace_ms = 0;
  return o;
}

TEST(ChildProcess, ControlLinesOnFd3WhileALargeLogIsDrained) {
  // 256 KiB of log before the first protocol line: 4x a pipe's capacity.
  ChildProcess c(
      runner_like("head -c 262144 /dev/zero | tr '\\0' x; echo; echo err-line >&2; "
                  "echo \"READY $ONLY_THIS\" >&3; read cmd; echo \"GOT $cmd\" >&3; exit 3"));
  EXPECT_EQ(c.read_line(Stream::kControl, wire::deadline_in_ms(5000)), "READY 1");
  c.write_stdin("GO abc\n", wire::deadline_in_ms(1000));
  EXPECT_EQ(c.read_line(Stream::kControl, wire::deadline_in_ms(5000)), "GOT GO abc");
  EXPECT_THROW(c.read_line(Stream::kControl, wire::deadline_in_ms(5000)),
               wire::WireError);  // fd 3 closed
  EXPECT_EQ(c.wait_exit(wire::deadline_in_ms(3000)), "exit status 3");
  EXPECT_EQ(c.log().size(), 262144u + 1 + 9);
  EXPECT_NE(c.log().find("err-line"), std::string::npos);
  EXPECT_FALSE(c.log_truncated());
  EXPECT_EQ(c.stderr_tail(), "");
}

TEST(ChildProcess, LogIsCappedAndTheCutIsReported) {
  ChildOptions o = runner_like("head -c 100000 /dev/zero; echo done >&3");
  o.max_log_bytes = 4096;
  ChildProcess c(o);
  EXPECT_EQ(c.read_line(Stream::kControl, wire::deadline_in_ms(5000)), "done");
  c.wait_exit(wire::deadline_in_ms(3000));
  EXPECT_EQ(c.log().size(), 4096u);
  EXPECT_TRUE(c.log_truncated());
}

TEST(ChildProcess, ASilentChildIsKilledAtTheExitDeadline) {
  ChildProcess c(runner_like("exec sleep 30"));
  auto t0 = wire::Clock::now();
  EXPECT_EQ(c.wait_exit(wire::deadline_in_ms(300)), "killed by signal 9");
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(wire::Clock::now() - t0).count(),
            2000);
}

TEST(ChildProcess, AnOverlongControlLineIsRefusedByName) {
  ChildProcess c(runner_like("head -c 5000 /dev/zero | tr '\\0' y >&3; sleep 5"));
  try {
    c.read_line(Stream::kControl, wire::deadline_in_ms(5000), 1024);
    FAIL() << "accepted a 5000-byte line with a 1024-byte cap";
  } catch (const wire::WireError& e) {
    EXPECT_EQ(e.kind(), wire::WireErrorKind::kOversized) << e.what();
  }
}

TEST(ChildProcess, WritingToAChildThatExitedIsClosedNotSigpipe) {
  ChildProcess c(runner_like("exit 0"));
  c.wait_exit(wire::deadline_in_ms(3000));
  try {
    for (int i = 0; i < 4; ++i) c.write_stdin(std::string(65536, 'z'), wire::deadline_in_ms(1000));
    FAIL() << "wrote 256 KiB into a dead child's stdin";
  } catch (const wire::WireError& e) {
    EXPECT_EQ(e.kind(), wire::WireErrorKind::kClosed) << e.what();
  }
}

TEST(ChildProcess, APayloadTheChildNeverReadsEndsWhenTheChildExits) {
  // A --ship receiver that refuses exits without reading the binary: the write must end with its
  // exit (the controller held the pipe's read end while writing, and waited out the deadline).
  ChildOptions o;
  o.argv = {"sh", "-c", "echo refused; exit 97"};
  o.search_path = true;
  o.stdout_is_log = true;
  o.stdin_payload = std::make_shared<const std::string>(8u << 20, 'b');
  o.stdin_payload_timeout_ms = 20000;
  o.stdin_text = "token\n";
  const auto t0 = std::chrono::steady_clock::now();
  ChildProcess c(o);
  c.wait_exit(wire::deadline_in_ms(5000));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_TRUE(WIFEXITED(c.exit_status()));
  EXPECT_EQ(WEXITSTATUS(c.exit_status()), 97);
  EXPECT_EQ(c.log(), "refused\n");
}

}  // namespace
}  // namespace fabkit::launch
