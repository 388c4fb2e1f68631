// fabcheck --ship's pieces without hosts: the receiving sh program run for real on this machine
// (through a template launcher, as on a host: exact size from stdin, the token left for the
// agent, SHA-256 checked, the private directory removed), a damaged copy refused with its JSON
// line, the quoting for ssh, and the controller's version check on the agent's hello.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/build_info.h"
#include "common/errors.h"
#include "common/json_read.h"
#include "fabric/launch/child_process.h"
#include "fabric/launch/ship.h"
#include "fabric/pair/agent_client.h"
#include "fabric/wire/messages.h"

namespace fabkit::launch {
namespace {

namespace fs = std::filesystem;
using V = std::vector<std::string>;

// Stands for fabcheck on the host: prints its arguments, the rest of its stdin (the token) and
// whether it runs from a private directory the receiver named.
const char* const kFakeBinary =
    "#!/bin/sh\n"
    "read -r token\n"
    "echo \"args=$* token=$token dir=$FABKIT_SHIPPED_DIR mode=$(stat -c %a "
    "\"$FABKIT_SHIPPED_DIR\")\"\n";

struct Received {
  int exit_code = -1;
  std::string out;
};

class ShipReceiver : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fabkit-ship-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    binary_ = (base_ / "fabcheck").string();
    FILE* f = std::fopen(binary_.c_str(), "w");
    std::fputs(kFakeBinary, f);
    std::fclose(f);
    ship_dir_ = base_ / "hosts";
    fs::create_directory(ship_dir_);
  }
  void TearDown() override { fs::remove_all(base_); }

  Received run(const std::string& payload_override = "") {
    LauncherSpec spec = parse_launcher("env FABKIT_TEST_HOST={host}", 5);
    Shipment ship(read_ship_binary(binary_), spec, ship_dir_.string(), 5000);
    RemoteCommand cmd = remote_fabcheck(spec, "", &ship, "h1", {"agent", "--name", "h1"});
    ChildOptions o;
    o.argv = cmd.argv;
    o.search_path = true;
    o.stdout_is_log = true;
    o.stdin_payload = payload_override.empty()
                          ? cmd.stdin_payload
                          : std::make_shared<const std::string>(payload_override);
    o.stdin_text = "the-token\n";
    ChildProcess c(o);
    c.wait_exit(wire::deadline_in_ms(10000));
    Received r;
    r.exit_code = WIFEXITED(c.exit_status()) ? WEXITSTATUS(c.exit_status()) : -1;
    r.out = c.log();
    return r;
  }

  fs::path base_, ship_dir_;
  std::string binary_;
};

TEST_F(ShipReceiver, RunsTheCheckedCopyFromAPrivateDirectoryThenRemovesIt) {
  Received r = run();
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("args=agent --name h1 token=the-token dir=" + ship_dir_.string() +
                       "/fabcheck-ship."),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("mode=700"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_empty(ship_dir_));
}

TEST_F(ShipReceiver, ADamagedCopyIsNotRunAndIsRemoved) {
  std::string damaged = *read_ship_binary(binary_).bytes;
  damaged[20] ^= 0x20;
  Received r = run(damaged);
  EXPECT_EQ(r.exit_code, kShipExitChecksum) << r.out;
  EXPECT_EQ(r.out.find("token="), std::string::npos) << r.out;  // never ran
  auto failure = parse_ship_failure(parse_json(r.out.substr(0, r.out.find('\n')), "receiver line"));
  ASSERT_TRUE(failure);
  EXPECT_EQ(failure->code, "pair.ship_checksum_mismatch");
  EXPECT_NE(failure->message.find(sha256_hex(damaged)), std::string::npos) << failure->message;
  EXPECT_NE(failure->message.find(read_ship_binary(binary_).sha256_hex), std::string::npos);
  EXPECT_TRUE(fs::is_empty(ship_dir_));
}

TEST_F(ShipReceiver, ACopyCutShortIsRefusedToo) {
  std::string whole = *read_ship_binary(binary_).bytes;
  Received r = run(whole.substr(0, whole.size() / 2));  // then the token: still the wrong bytes
  EXPECT_EQ(r.exit_code, kShipExitChecksum) << r.out;
  EXPECT_TRUE(fs::is_empty(ship_dir_));
}

TEST(Ship, Sha256IsLibcryptos) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Ship, SshGetsTheProgramSingleQuotedAndInertArguments) {
  LauncherSpec s = parse_launcher("ssh", 5);
  auto argv =
      launcher_sh_argv(s, "node01", "echo \"$1\"", "fabcheck-ship", {"agent", "--name", "node01"});
  EXPECT_EQ(argv, (V{"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "--", "node01", "sh",
                     "-c", "'echo \"$1\"'", "fabcheck-ship", "agent", "--name", "node01"}));
  EXPECT_THROW(launcher_sh_argv(s, "node01", "true", "x", {"a;b"}), UsageError);
  EXPECT_THROW(launcher_sh_argv(s, "node01", "echo 'x'", "x", {}), std::invalid_argument);
  // The real programs fit that rule.
  for (const auto* p : {&stdin_receiver_script(), &file_receiver_script()})
    EXPECT_EQ(p->find_first_of("'!\n"), std::string::npos) << *p;
}

TEST(Ship, SrunOutsideAnAllocationIsAUsageError) {
  ::unsetenv("SLURM_JOB_ID");
  ::unsetenv("SLURM_JOB_NUM_NODES");
  ::unsetenv("SLURM_NNODES");
  ShipBinary b;
  b.path = "/bin/true";
  b.bytes = std::make_shared<const std::string>("x");
  EXPECT_THROW(Shipment(b, parse_launcher("srun", 5), "", 1000), UsageError);
  EXPECT_THROW(Shipment(b, parse_launcher("ssh", 5), "relative/dir", 1000), UsageError);
  EXPECT_THROW(Shipment(b, parse_launcher("ssh", 5), "/tmp/a b", 1000), UsageError);
}

TEST(Ship, OtherLinesAreNotShipFailures) {
  EXPECT_FALSE(parse_ship_failure(Json{{"fabkit_agent", 4}}));
  EXPECT_FALSE(parse_ship_failure(Json::array()));
  auto f = parse_ship_failure(Json{{"fabkit_ship_error", "mktemp_failed"}, {"dir", "/tmp"}});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, "pair.ship_failed");
}

}  // namespace
}  // namespace fabkit::launch

namespace fabkit::pair {
namespace {

TEST(AgentVersion, SameReleaseAndProtocolPass) {
  EXPECT_NO_THROW(check_agent_version(
      "h", Json{{"fabkit_agent", wire::kProtocolVersion}, {"version", fabkit_version()}}));
}

TEST(AgentVersion, AnotherReleaseIsRefusedNamingBoth) {
  try {
    check_agent_version("node07",
                        Json{{"fabkit_agent", wire::kProtocolVersion}, {"version", "0.0.1"}});
    FAIL() << "accepted another release";
  } catch (const StepError& e) {
    EXPECT_EQ(e.code(), "pair.version_mismatch");
    EXPECT_EQ(e.host(), "node07");
    EXPECT_NE(std::string(e.what()).find("fabcheck 0.0.1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::string("fabcheck ") + fabkit_version()),
              std::string::npos);
  }
}

TEST(AgentVersion, AnotherProtocolOrNoVersionIsRefused) {
  EXPECT_THROW(check_agent_version("h", Json{{"fabkit_agent", wire::kProtocolVersion - 1},
                                             {"version", fabkit_version()}}),
               StepError);
  EXPECT_THROW(check_agent_version("h", Json{{"fabkit_agent", wire::kProtocolVersion}}), StepError);
}

}  // namespace
}  // namespace fabkit::pair
