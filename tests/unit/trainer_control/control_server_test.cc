// ControlServer over real Unix sockets in a temporary directory: the status round trip, actions
// delivered to poll(), permissions, a silent client, malformed requests answered by name.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "common/atomic_file.h"
#include "common/errors.h"
#include "fabric/wire/wire_error.h"
#include "tests/support/ttar.h"
#include "tests/unit/trainer_control/control_test_util.h"
#include "trainer/control/control_client.h"
#include "trainer/control/control_server.h"

namespace fabkit::trainer::control {
namespace {
namespace fs = std::filesystem;
using Ms = std::chrono::milliseconds;

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

ControlServerOptions opts(const fs::path& dir, const std::string& job = "run1") {
  ControlServerOptions o;
  o.job = job;
  o.control_dir = dir / "ctl";
  o.output_dir = dir / "out";
  return o;
}

TEST(ControlServer, StatusRoundTrip) {
  testing::TempDir t("ctl_status");
  ControlServer server(opts(t.path()));
  const Environment env = env_with_dir(t.path() / "ctl");

  // Before the first step: numbers the loop has not produced yet are null, not zeros.
  ControlOutcome first = run_control({"status", "run1", true}, env);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  Json j0 = Json::parse(first.out);
  EXPECT_TRUE(j0["status"]["loss"].is_null());
  EXPECT_TRUE(j0["status"]["eta_s"].is_null());
  EXPECT_EQ(j0["status"]["phase"], "starting");

  for (int step = 1; step <= 3; ++step) {
    server.publish_status({step, 10, 3.0 / step, 1000.0 * step, "training"});
    std::this_thread::sleep_for(Ms(20));
  }
  ControlOutcome o = run_control({"status", "run1", true}, env);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  Json j = Json::parse(o.out);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["job"], "run1");
  const Json& st = j["status"];
  EXPECT_EQ(st["step"], 3);
  EXPECT_EQ(st["total_steps"], 10);
  EXPECT_DOUBLE_EQ(st["loss"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(st["tokens_per_s"].get<double>(), 3000.0);
  EXPECT_EQ(st["phase"], "training");
  EXPECT_EQ(st["pid"], static_cast<long>(::getpid()));
  // ~20 ms per step, 7 steps left: ~0.14 s (generous bounds for a loaded machine).
  ASSERT_TRUE(st["eta_s"].is_number()) << st.dump();
  EXPECT_GT(st["eta_s"].get<double>(), 0.05);
  EXPECT_LT(st["eta_s"].get<double>(), 5.0);

  ControlOutcome text = run_control({"status", "run1"}, env);
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("run1: step 3/10  loss 1.0000  tokens/s 3000  ETA "), std::string::npos)
      << text.out;
  // The job's pid works as its name too.
  EXPECT_EQ(run_control({"status", std::to_string(::getpid())}, env).exit_code, 0);
}

TEST(ControlServer, StopSaveAbortReachPoll) {
  testing::TempDir t("ctl_actions");
  ControlServer server(opts(t.path()));
  const Environment env = env_with_dir(t.path() / "ctl");
  EXPECT_EQ(server.poll(), Action::kNone);

  ControlOutcome o = run_control({"save", "run1"}, env);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("save requested"), std::string::npos) << o.out;
  EXPECT_EQ(server.poll(), Action::kSave);
  EXPECT_EQ(server.poll(), Action::kNone);  // taken once

  ASSERT_EQ(run_control({"stop", "run1"}, env).exit_code, 0);
  EXPECT_EQ(server.poll(), Action::kStop);

  // Requests between two polls: the strongest is kept, and status shows it pending.
  ASSERT_EQ(run_control({"abort", "run1"}, env).exit_code, 0);
  ASSERT_EQ(run_control({"save", "run1"}, env).exit_code, 0);
  ControlOutcome s = run_control({"status", "run1", true}, env);
  EXPECT_EQ(Json::parse(s.out)["status"]["pending"], "abort");
  EXPECT_EQ(server.poll(), Action::kAbort);
  EXPECT_EQ(server.poll(), Action::kNone);
}

TEST(ControlServer, OwnerOnlyPermissions) {
  testing::TempDir t("ctl_perm");
  fs::create_directories(t.path() / "ctl");
  ::chmod((t.path() / "ctl").c_str(), 0755);  // ours but open: tightened, not trusted as is
  ControlServer server(opts(t.path()));
  EXPECT_EQ(mode_of(t.path() / "ctl"), 0700u);
  EXPECT_EQ(mode_of(server.socket_path()), 0600u);
  EXPECT_TRUE(S_ISSOCK([&] {
    struct stat st {};
    ::lstat(server.socket_path().c_str(), &st);
    return st.st_mode;
  }()));
  EXPECT_EQ(mode_of(server.registration_path()), 0600u);

  if (::geteuid() != 0) GTEST_SKIP() << "the other-user checks need root (to act as another uid)";
  // Another user cannot even reach the socket (the 0700 directory stops the connect).
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
    int err = 0;
    UniqueFd fd = connect_unix(server.socket_path(), &err);
    ::_exit(fd ? 11 : (err == EACCES ? 0 : 12));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit " << WEXITSTATUS(status);

  // A control directory owned by someone else is refused, with the fix.
  fs::create_directories(t.path() / "theirs");
  ASSERT_EQ(::chown((t.path() / "theirs").c_str(), 65534, 65534), 0);
  ControlServerOptions o = opts(t.path(), "run2");
  o.control_dir = t.path() / "theirs";
  try {
    ControlServer other(o);
    FAIL() << "accepted a control directory owned by uid 65534";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("FABTRAIN_CONTROL_DIR"), std::string::npos) << e.what();
  }
}

TEST(ControlServer, SilentClientDoesNotBlockTheLoopOrOthers) {
  testing::TempDir t("ctl_silent");
  ControlServerOptions o = opts(t.path());
  o.io_timeout_ms = 1500;
  ControlServer server(o);
  int err = 0;
  UniqueFd silent = connect_unix(server.socket_path(), &err);
  ASSERT_TRUE(silent) << err;
  const auto t0 = std::chrono::steady_clock::now();

  // The loop's poll never waits for a client.
  for (int i = 0; i < 100; ++i) server.poll();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, Ms(200));

  // Another client is served while the silent one is still connected.
  Json r = raw_exchange(server.socket_path(), "{\"command\":\"status\"}\n");
  EXPECT_EQ(r["ok"], true);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, Ms(1000));

  // The silent one is answered control.timeout and closed once its deadline passes.
  std::string line = read_line(silent.get(), 4096, wire::deadline_in_ms(5000), "timeout reply");
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(Json::parse(line)["error"], errc::kTimeout) << line;
  EXPECT_GE(waited, Ms(1450));
  EXPECT_LT(waited, Ms(4000));
  wire::wait_fd(silent.get(), POLLIN, wire::deadline_in_ms(2000), "close");
  char c;
  EXPECT_EQ(::recv(silent.get(), &c, 1, 0), 0);  // closed
}

TEST(ControlServer, MalformedRequestsAreAnsweredByName) {
  testing::TempDir t("ctl_bad");
  ControlServer server(opts(t.path()));
  const fs::path sock = server.socket_path();
  EXPECT_EQ(raw_exchange(sock, "not json\n")["error"], errc::kMalformedJson);
  EXPECT_EQ(raw_exchange(sock, "[1,2]\n")["error"], errc::kBadRequest);
  EXPECT_EQ(raw_exchange(sock, "{\"command\": 7}\n")["error"], errc::kBadRequest);
  Json unknown = raw_exchange(sock, "{\"command\":\"fly\"}\n");
  EXPECT_EQ(unknown["error"], errc::kUnknownCommand);
  EXPECT_NE(unknown["message"].get<std::string>().find("'fly'"), std::string::npos);
  EXPECT_EQ(raw_exchange(sock, "{\"command\":\"stop\",\"protocol\":2}\n")["error"],
            errc::kVersionMismatch);
  EXPECT_EQ(raw_exchange(sock, std::string(kMaxLineBytes + 10, 'x'))["error"], errc::kLineTooLong);
  EXPECT_EQ(raw_exchange(sock, "\xff\xfe{\n")["error"], errc::kMalformedJson);
  // None of them requested anything, and the server still answers.
  EXPECT_EQ(server.poll(), Action::kNone);
  EXPECT_EQ(raw_exchange(sock, "{\"command\":\"status\"}", true)["ok"],
            true);  // EOF ends a request too
}

TEST(ControlServer, SecondLiveJobWithTheSameNameIsRefused) {
  testing::TempDir t("ctl_dup");
  ControlServer a(opts(t.path()));
  try {
    ControlServer b(opts(t.path()));
    FAIL() << "two live servers for job run1";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("already running"), std::string::npos) << e.what();
  }
  ControlServer c(opts(t.path(), "run2"));  // another name is fine
}

TEST(ControlServer, LeftoverOfAnotherHostIsNotTakenOver) {
  // A control directory shared between nodes: node2's socket file refuses connections here, but
  // node2's job is not dead.
  testing::TempDir t("ctl_shared");
  const fs::path dir = t.path() / "ctl";
  open_control_dir(dir, /*create=*/true);
  {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un a = unix_address(dir / "run1.sock");
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }
  Registration r{"run1", 1234, "node2-not-this-host", dir / "run1.sock", "/out", 1.0, {}};
  write_file_atomically(dir / "run1.json", to_json(r).dump(), 0600);
  try {
    ControlServer s(opts(t.path()));
    FAIL() << "took over another host's endpoint";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("node-local"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(dir / "run1.json"));
  // cleanup leaves it alone too.
  ControlOutcome c = run_control({"cleanup", ""}, env_with_dir(dir));
  EXPECT_EQ(c.out, "nothing to clean: no stale endpoints\n");
  EXPECT_TRUE(fs::exists(dir / "run1.json"));
}

TEST(ControlServer, EndpointRemovedOnDestruction) {
  testing::TempDir t("ctl_gone");
  fs::path sock, reg;
  {
    ControlServer s(opts(t.path()));
    sock = s.socket_path();
    reg = s.registration_path();
    EXPECT_TRUE(fs::exists(reg));
  }
  EXPECT_FALSE(fs::exists(fs::symlink_status(sock)));
  EXPECT_FALSE(fs::exists(reg));
  // And the name is free again.
  ControlServer again(opts(t.path()));
}

TEST(ControlServer, BadJobIdsAndLongPaths) {
  testing::TempDir t("ctl_ids");
  for (const char* bad : {"", "../x", "a/b", ".hidden", "sp ace"}) {
    ControlServerOptions o = opts(t.path(), bad);
    EXPECT_THROW(ControlServer s(o), UsageError) << bad;
  }
  EXPECT_EQ(job_id_from_output_dir("/data/runs/llama 7b/"), "llama-7b");
  EXPECT_EQ(job_id_from_output_dir("/x/.out"), "out");
  ControlServerOptions o = opts(t.path());
  o.control_dir = t.path() / std::string(120, 'd');
  try {
    ControlServer s(o);
    FAIL() << "a socket path past sun_path";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("set FABTRAIN_CONTROL_DIR to a shorter directory"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace fabkit::trainer::control
