// Launcher templating: argv without a shell, rejection of anything that would need one, host-name
// checks against option injection.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "fabric/launch/child_process.h"
#include "fabric/launch/launcher.h"

namespace fabkit::launch {
namespace {

using V = std::vector<std::string>;

TEST(Launcher, SshIsTheDefaultWithBatchModeAndConnectTimeout) {
  auto s = parse_launcher("", 7);
  EXPECT_EQ(s.kind, LauncherKind::kSsh);
  EXPECT_EQ(launcher_argv(s, "node01", {"/opt/fabcheck", "agent"}),
            (V{"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=7", "--", "node01", "/opt/fabcheck", "agent"}));
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
  EXPECT_EQ(launcher_argv(d, "c1", {"fabcheck"}), (V{"docker", "exec", "-i", "--user=u", "c1", "fabcheck"}));
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
  EXPECT_THROW(parse_launcher("ip netns exec", 10), UsageError);            // no {host}
  EXPECT_THROW(parse_launcher("exec {hostname} {host}", 10), UsageError);   // unknown placeholder
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

TEST(ChildProcess, TokenArrivesOnStdinAndStdoutIsReadWithADeadline) {
  ChildProcess c({"sh", "-c", "read t; echo got:$t; sleep 5"}, "tok123");
  EXPECT_EQ(c.read_line(wire::deadline_in_ms(3000)), "got:tok123");
  auto t0 = wire::Clock::now();
  EXPECT_THROW(c.read_line(wire::deadline_in_ms(200)), std::exception);  // nothing more: timeout
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(wire::Clock::now() - t0).count(), 1500);
  c.stop(500);
  EXPECT_TRUE(c.exited());
  EXPECT_EQ(c.describe_exit(), "killed by signal 15");
}

TEST(ChildProcess, StderrOfAFailedLauncherIsKept) {
  ChildProcess c({"sh", "-c", "echo 'ssh: connect to host x port 22: No route to host' >&2; exit 255"}, "t");
  EXPECT_THROW(c.read_line(wire::deadline_in_ms(3000)), std::exception);  // EOF
  for (int i = 0; i < 100 && !c.exited(); ++i) ::usleep(10000);
  EXPECT_EQ(c.describe_exit(), "exit status 255");
  EXPECT_NE(c.stderr_tail().find("No route to host"), std::string::npos);
}

TEST(ChildProcess, MissingLauncherBinaryIsASysError) {
  EXPECT_THROW(ChildProcess({"/nonexistent/launcher-xyz", "a"}, "t"), SysErrorException);
}

}  // namespace
}  // namespace fabkit::launch
