// The three commands end to end on a sysroot built from a real-format sysfs capture
// (tests/fixtures/rdma/sysfs_ib_hdr_roce_v2.ttar: mlx5_0 IB HDR, mlx5_2 RoCE) plus one interface.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/json.h"
#include "tests/support/ttar.h"

namespace fabkit {
namespace {

namespace fs = std::filesystem;
using fabkit::testing::TempDir;
using fabkit::testing::write_file;

struct CliRun {
  int code = -1;
  std::string out;
};

std::string q(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

CliRun fabcheck(const std::string& args, bool merge_stderr = false) {
  std::string cmd = std::string(FABCHECK_BIN) + " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ProfileCli : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::unpack_ttar(testing::project_fixtures() / "rdma" / "sysfs_ib_hdr_roce_v2.ttar", root(), "");
    auto net = root() / "sys/class/net/ens1f0np0";
    write_file(net / "operstate", "up\n");
    write_file(net / "flags", "0x1003\n");  // IFF_UP | IFF_BROADCAST | IFF_MULTICAST
    write_file(net / "type", "1\n");
    write_file(net / "mtu", "9000\n");
    write_file(net / "speed", "100000\n");
    write_file(net / "ifindex", "4\n");
    write_file(net / "iflink", "4\n");
    // A node report from the fixture tree, under the host name the profile will know it by.
    CliRun node = fabcheck("node --json --sysroot " + q(root().string()));
    ASSERT_FALSE(node.out.empty());
    Json j = Json::parse(node.out);
    j["hostname"] = "sr-node";
    write_file(dir() / "node.json", j.dump(2));
    CliRun prof = fabcheck("profile --out " + q(profile()) + " " + q((dir() / "node.json").string()), true);
    ASSERT_EQ(prof.code, 0) << prof.out;
  }
  fs::path dir() const { return tmp_.path(); }
  fs::path root() const { return tmp_.path() / "root"; }
  std::string profile() const { return (tmp_.path() / "cluster.json").string(); }
  CliRun validate(const std::string& extra = "") {
    return fabcheck("validate " + q(profile()) + " --json --sysroot " + q(root().string()) +
                    " --host sr-node " + extra);
  }
  static std::vector<std::string> codes(const CliRun& r) {
    std::vector<std::string> out;
    Json doc = Json::parse(r.out);  // kept alive: a range over a temporary's member dangles
    for (const auto& f : doc["findings"]) out.push_back(f["code"].get<std::string>());
    return out;
  }
  TempDir tmp_{"profile-cli"};
};

TEST_F(ProfileCli, ProfileRecordsTheFixtureNode) {
  Json p = Json::parse(slurp(profile()));
  EXPECT_EQ(p.begin().key(), "schema_version");
  ASSERT_EQ(p["nodes"].size(), 1u);
  EXPECT_EQ(p["nodes"][0]["interface"], "ens1f0np0");
  // Both ports are ACTIVE; the InfiniBand one is chosen, so NCCL never mixes IB and RoCE.
  EXPECT_EQ(p["settings"]["NCCL_IB_HCA"]["value"], "=mlx5_0:1");
  EXPECT_EQ(p["nodes"][0]["hcas"][0]["rate_gbps"], 200);
}

TEST_F(ProfileCli, ValidateMatchingNodeExitsZero) {
  CliRun r = validate();
  EXPECT_EQ(r.code, 0) << r.out;
  auto c = codes(r);
  EXPECT_EQ(std::count(c.begin(), c.end(), "profile.interface_missing"), 0);
  EXPECT_EQ(std::count(c.begin(), c.end(), "profile.hca_not_active"), 0);
}

TEST_F(ProfileCli, ValidateDriftedNodeFails) {
  write_file(root() / "sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  write_file(root() / "sys/class/infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)\n");
  fs::remove_all(root() / "sys/class/net/ens1f0np0");
  CliRun r = validate();
  EXPECT_EQ(r.code, 1) << r.out;
  auto c = codes(r);
  for (const char* want : {"profile.hca_not_active", "profile.hca_rate", "profile.interface_missing"})
    EXPECT_NE(std::find(c.begin(), c.end(), want), c.end()) << want << "\n" << r.out;
}

TEST_F(ProfileCli, EmitEnvFromProfileAndWithoutOne) {
  CliRun ds = fabcheck("emit-env --profile " + q(profile()) + " --host sr-node");
  ASSERT_EQ(ds.code, 0);
  EXPECT_NE(ds.out.find("NCCL_SOCKET_IFNAME==ens1f0np0\n"), std::string::npos) << ds.out;
  EXPECT_NE(ds.out.find("NCCL_IB_HCA==mlx5_0:1\n"), std::string::npos) << ds.out;
  CliRun live = fabcheck("emit-env --format json --sysroot " + q(root().string()) + " --host sr-node");
  ASSERT_EQ(live.code, 0);
  Json j = Json::parse(live.out);
  ASSERT_FALSE(j["settings"].empty());
  for (const auto& s : j["settings"]) EXPECT_EQ(s["basis"], "unmeasured") << s["name"];
}

TEST_F(ProfileCli, BadProfileIsExit2NamesFieldAndWritesNothing) {
  Json p = Json::parse(slurp(profile()));
  p["settings"]["MASTER_PORT"]["value"] = "29500;reboot";
  write_file(dir() / "bad.json", p.dump());
  write_file(dir() / "existing.env", "KEEP=1\n");
  CliRun e = fabcheck("emit-env --profile " + q((dir() / "bad.json").string()) + " --host sr-node --out " +
                   q((dir() / "existing.env").string()), true);
  EXPECT_EQ(e.code, 2);
  EXPECT_NE(e.out.find("settings.MASTER_PORT.value"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("29500;reboot"), std::string::npos) << e.out;
  EXPECT_EQ(slurp(dir() / "existing.env"), "KEEP=1\n");
  CliRun v = fabcheck("validate " + q((dir() / "bad.json").string()) + " --host sr-node", true);
  EXPECT_EQ(v.code, 2);
  // A bad input report: no profile file appears.
  write_file(dir() / "broken.json", "{\"schema_version\": 1, \"kind\": \"node\"");
  CliRun b = fabcheck("profile --out " + q((dir() / "new.json").string()) + " " + q((dir() / "broken.json").string()), true);
  EXPECT_EQ(b.code, 2);
  EXPECT_NE(b.out.find("broken.json"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir() / "new.json"));
  for (const auto& entry : fs::directory_iterator(dir()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
}

// Issue #19, item 8, end to end: a bind apptainer would split and a 1 MiB value are exit 2 with
// the value, the format and the reason named, and --out is left as it was.
TEST_F(ProfileCli, EmitEnvRefusesWhatItsConsumersWouldSplitOrCannotCarry) {
  write_file(dir() / "existing.env", "KEEP=1\n");
  const std::string out = " --host sr-node --out " + q((dir() / "existing.env").string());
  Json p = Json::parse(slurp(profile()));
  p["container"]["binds"] = {"/etc,/srv"};
  write_file(dir() / "comma.json", p.dump());
  CliRun a = fabcheck(
      "emit-env --format apptainer --profile " + q((dir() / "comma.json").string()) + out, true);
  EXPECT_EQ(a.code, 2) << a.out;
  EXPECT_NE(
      a.out.find("emit-env --format apptainer: container bind path \"/etc,/srv\" contains ','"),
      std::string::npos)
      << a.out;
  EXPECT_EQ(slurp(dir() / "existing.env"), "KEEP=1\n");

  p["container"]["binds"] = Json::array();
  p["settings"]["NCCL_TOPO_FILE"] = p["settings"]["NCCL_IB_TIMEOUT"];  // a whole setting
  p["settings"]["NCCL_TOPO_FILE"]["value"] = "/" + std::string((1 << 20) - 1, 'a');
  write_file(dir() / "long.json", p.dump());
  for (const char* format : {"deepspeed", "shell", "json"}) {
    CliRun l = fabcheck(std::string("emit-env --format ") + format + " --profile " +
                            q((dir() / "long.json").string()) + out,
                        true);
    EXPECT_EQ(l.code, 2) << format;
    EXPECT_NE(l.out.find("settings.NCCL_TOPO_FILE.value"), std::string::npos)
        << l.out.substr(0, 500);
    EXPECT_NE(l.out.find("is 1048576 bytes long, over the limit of 4096 bytes"), std::string::npos)
        << l.out.substr(0, 500);
    EXPECT_LT(l.out.size(), 2000u);
    EXPECT_EQ(slurp(dir() / "existing.env"), "KEEP=1\n");
  }
}

TEST_F(ProfileCli, UnknownFormatAndUnknownHostAreUsageErrors) {
  EXPECT_EQ(fabcheck("emit-env --profile " + q(profile()) + " --host sr-node --format yaml").code, 2);
  // A single-node profile has no per-host settings, so it applies to other hosts; validate
  // then warns that the host is not covered.
  CliRun other = fabcheck("validate " + q(profile()) + " --json --sysroot " + q(root().string()) + " --host elsewhere");
  EXPECT_EQ(other.code, 1);
  auto c = codes(other);
  EXPECT_NE(std::find(c.begin(), c.end(), "profile.host_unknown"), c.end());
}

TEST_F(ProfileCli, GeneratedAndGoldenProfilesMatchTheJsonSchema) {
  if (std::system("/usr/bin/python3 -c 'import jsonschema' 2>/dev/null") != 0)
    GTEST_SKIP() << "python3-jsonschema is not installed (scripts/debian-packages.txt lists it)";
  std::string schema = std::string(FABKIT_SOURCE_DIR) + "/docs/schema/cluster.schema.json";
  std::string fixtures = std::string(FABKIT_SOURCE_DIR) + "/tests/fixtures/profile/";
  Json p = Json::parse(slurp(profile()));
  p["hosts"]["sr-node"]["NCCL_SOCKET_IFNAME"] = p["settings"]["NCCL_SOCKET_IFNAME"];
  p["hosts"]["sr-node"]["NCCL_SOCKET_IFNAME"]["value"] = "=eno1;id";
  write_file(dir() / "bad-schema.json", p.dump());
  std::string py =
      "import json,sys,jsonschema\n"
      "s=json.load(open(sys.argv[1])); jsonschema.Draft202012Validator.check_schema(s)\n"
      "v=jsonschema.Draft202012Validator(s)\n"
      "for f in sys.argv[2:-1]: v.validate(json.load(open(f)))\n"
      "errs=list(v.iter_errors(json.load(open(sys.argv[-1]))))\n"
      "sys.exit(0 if errs else 7)\n";
  write_file(dir() / "check.py", py);
  std::string cmd = "/usr/bin/python3 " + q((dir() / "check.py").string()) + " " + q(schema) + " " +
                    q(profile()) + " " + q(fixtures + "cluster-ib.json") + " " +
                    q(fixtures + "cluster-roce.json") + " " + q((dir() / "bad-schema.json").string());
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

TEST_F(ProfileCli, ValidateIsFastEnoughForAProlog) {
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    CliRun r = validate();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    ASSERT_EQ(r.code, 0);
  }
  std::sort(ms.begin(), ms.end());
  RecordProperty("validate_median_ms", std::to_string(ms[2]));
  // Slurm runs the prolog before every job step on every node; a second is the budget we allow.
  EXPECT_LT(ms[2], 1000.0) << "median validate time " << ms[2] << " ms";
}

}  // namespace
}  // namespace fabkit
