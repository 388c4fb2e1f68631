// The `fabtrain control` client: list, cleanup of dead jobs' endpoints, the errors a user sees,
// and where the control directory is.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "common/atomic_file.h"
#include "tests/support/ttar.h"
#include "tests/unit/trainer_control/control_test_util.h"
#include "trainer/control/control_client.h"
#include "trainer/control/control_server.h"
#include "trainer/control/endpoint.h"

namespace fabkit::trainer::control {
namespace {
namespace fs = std::filesystem;

// A pid that was just used and is now gone (reaped).
long dead_pid() {
  pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  int st;
  ::waitpid(p, &st, 0);
  return p;
}

// What a job killed with SIGKILL leaves: its registration, and a socket file nobody listens on.
void make_stale_endpoint(const fs::path& dir, const std::string& job, long pid) {
  open_control_dir(dir, /*create=*/true);
  const fs::path sock = dir / (job + ".sock");
  {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un a = unix_address(sock);
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }  // closed without unlink: connect now gets ECONNREFUSED
  Registration r{job, pid, this_host(), sock, "/tmp/out-" + job, 1.0, {}};
  write_file_atomically(dir / (job + ".json"), to_json(r).dump(), 0600);
}

TEST(ControlClient, CleanupRemovesOnlyDeadJobs) {
  testing::TempDir t("ctl_cleanup");
  const fs::path dir = t.path() / "ctl";
  ControlServer live({"alive", dir, t.path() / "out"});
  make_stale_endpoint(dir, "pidgone", dead_pid());
  make_stale_endpoint(dir, "refuses", static_cast<long>(::getpid()));  // pid alive, socket dead
  {
    // A socket left without a registration.
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un a = unix_address(dir / "orphan.sock");
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }
  const Environment env = env_with_dir(dir);

  ControlOutcome l = run_control({"list", "", true}, env);
  ASSERT_EQ(l.exit_code, 0) << l.err;
  Json jobs = Json::parse(l.out)["jobs"];
  ASSERT_EQ(jobs.size(), 3u) << l.out;
  std::map<std::string, std::string> state;
  for (const Json& j : jobs) state[j["job"]] = j["state"];
  EXPECT_EQ(state["alive"], "running");
  EXPECT_EQ(state["pidgone"], "stale");
  EXPECT_EQ(state["refuses"], "stale");
  EXPECT_NE(run_control({"list", ""}, env).out.find("fabtrain control cleanup"), std::string::npos);

  // A request to a dead job says so and points at cleanup.
  ControlOutcome s = run_control({"status", "pidgone"}, env);
  EXPECT_EQ(s.exit_code, 1);
  EXPECT_NE(s.err.find("is gone"), std::string::npos) << s.err;

  ControlOutcome c = run_control({"cleanup", ""}, env);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("'pidgone' (pid "), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("'refuses' (its socket refuses connections)"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("'orphan'"), std::string::npos) << c.out;
  for (const char* f :
       {"pidgone.sock", "pidgone.json", "refuses.sock", "refuses.json", "orphan.sock"})
    EXPECT_FALSE(fs::exists(fs::symlink_status(dir / f))) << f;
  EXPECT_TRUE(fs::exists(live.socket_path()));
  EXPECT_TRUE(fs::exists(live.registration_path()));
  EXPECT_EQ(run_control({"status", "alive"}, env).exit_code, 0);
  EXPECT_EQ(run_control({"cleanup", ""}, env).out, "nothing to clean: no stale endpoints\n");
}

TEST(ControlClient, UserErrorsNameTheValueAndTheFix) {
  testing::TempDir t("ctl_errors");
  const fs::path dir = t.path() / "ctl";
  ControlServer live({"run1", dir, t.path() / "out"});
  const Environment env = env_with_dir(dir);

  ControlOutcome missing = run_control({"status", "run9"}, env);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no job 'run9'"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("registered: run1"), std::string::npos) << missing.err;

  ControlOutcome no_job = run_control({"stop", ""}, env);
  EXPECT_EQ(no_job.exit_code, 2);
  EXPECT_NE(no_job.err.find("fabtrain control list"), std::string::npos) << no_job.err;

  ControlOutcome bad_id = run_control({"stop", "../etc"}, env);
  EXPECT_EQ(bad_id.exit_code, 2);
  EXPECT_NE(bad_id.err.find("'../etc'"), std::string::npos) << bad_id.err;

  EXPECT_EQ(run_control({"fly", "run1"}, env).exit_code, 2);
  EXPECT_EQ(run_control({"status", "run1", false, 0}, env).exit_code, 2);
  EXPECT_EQ(live.poll(), Action::kNone);  // nothing above reached the job
}

TEST(ControlClient, ListWithNoJobs) {
  testing::TempDir t("ctl_empty");
  ControlOutcome l = run_control({"list", ""}, env_with_dir(t.path() / "none"));
  EXPECT_EQ(l.exit_code, 0);
  EXPECT_NE(l.out.find("no fabtrain jobs on this node"), std::string::npos) << l.out;
}

TEST(ControlDir, ResolutionOrder) {
  testing::TempDir t("ctl_dirs");
  const std::string uid = std::to_string(::geteuid());
  EXPECT_EQ(control_dir_for(
                Environment({{"FABTRAIN_CONTROL_DIR", "/x/y"}, {"XDG_RUNTIME_DIR", t.path()}})),
            fs::path("/x/y"));
  EXPECT_EQ(control_dir_for(Environment({{"XDG_RUNTIME_DIR", t.path().string()}})),
            t.path() / "fabtrain");
  // Inherited from a login shell elsewhere: does not exist here.
  EXPECT_EQ(control_dir_for(Environment({{"XDG_RUNTIME_DIR", (t.path() / "nope").string()}})),
            fs::path("/tmp/fabtrain-" + uid));
  EXPECT_EQ(control_dir_for(Environment()), fs::path("/tmp/fabtrain-" + uid));

  fs::create_directories(t.path() / "a");
  fs::create_directories(t.path() / "x" / "fabtrain");
  // An explicit directory is searched alone; otherwise XDG's, then /tmp's.
  auto dirs =
      control_dirs_to_search(Environment({{"FABTRAIN_CONTROL_DIR", (t.path() / "a").string()},
                                          {"XDG_RUNTIME_DIR", (t.path() / "x").string()}}));
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(dirs[0], t.path() / "a");
  dirs = control_dirs_to_search(Environment({{"XDG_RUNTIME_DIR", (t.path() / "x").string()}}));
  ASSERT_GE(dirs.size(), 1u);
  EXPECT_EQ(dirs[0], t.path() / "x" / "fabtrain");
}

}  // namespace
}  // namespace fabkit::trainer::control
