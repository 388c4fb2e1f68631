// profile -> emit-env -> parse back, for every format, with the real consumers where this machine
// has them (bash for shell/slurm/apptainer/docker words) and DeepSpeed's own line rule.
#include <gtest/gtest.h>

#include <sstream>

#include "common/errors.h"
#include "common/file_reader.h"
#include "profile/profile.h"
#include "profile/resolver.h"
#include "profile/value_rules.h"
#include "reports/env/emitter.h"
#include "test_util.h"
#include "tests/support/ttar.h"

namespace fabkit::profile {
namespace {
using namespace fabkit::reports::env;  // the emitters under test

using testing::parse_env_output;
using testing::q;
using testing::run;

class EmitRoundTrip : public ::testing::Test {
 protected:
  void SetUp() override {
    // RoCE pair: per-host interfaces, a comma list (NCCL_IB_HCA with two ports added below), a
    // topology file to bind.
    profile_ = testing::build({"node-roce-a.json", "node-roce-b.json", "pair-roce-a-roce-b.json"});
    profile_.settings["NCCL_IB_HCA"].value = "=mlx5_0:1,mlx5_1:1";
    expected_ = resolve_env(profile_, "roce-b");
    in_.host = "roce-b";
    in_.source = "cluster.json (test)";
    in_.settings = resolve_settings(profile_, "roce-b");
    in_.container = profile_.container;
    in_.profile_has_per_host = !profile_.hosts.empty();
  }
  std::string write(const std::string& name, const std::string& text) {
    auto path = dir_.path() / name;
    fabkit::testing::write_file(path, text);
    return path.string();
  }
  Profile profile_;
  std::map<std::string, std::string> expected_;
  EmitInput in_;
  fabkit::testing::TempDir dir_{"profile-emit"};
};

// DeepSpeed runner.py: for each line, key, val = line.split('=', maxsplit=1); strip both.
std::map<std::string, std::string> parse_like_deepspeed(const std::string& text) {
  std::map<std::string, std::string> env;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) throw std::runtime_error("line without '=': DeepSpeed raises: " + line);
    auto strip = [](std::string s) {
      s.erase(0, s.find_first_not_of(" \t\r\n"));
      s.erase(s.find_last_not_of(" \t\r\n") + 1);
      return s;
    };
    env[strip(line.substr(0, eq))] = strip(line.substr(eq + 1));
  }
  return env;
}

TEST_F(EmitRoundTrip, Deepspeed) {
  std::string text = emit(Format::kDeepspeed, in_);
  EXPECT_EQ(text.find('#'), std::string::npos);  // no comments: DeepSpeed has no comment syntax
  EXPECT_EQ(text.find("\n\n"), std::string::npos);
  EXPECT_EQ(parse_like_deepspeed(text), expected_);
  // The PDSH runner pastes `export K=V; ` unquoted (older releases): bash must read it back.
  std::string exports;
  for (const auto& [k, v] : parse_like_deepspeed(text)) exports += "export " + k + "=" + v + "; ";
  auto r = run("env -i bash -c " + q(exports + "env"));
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(parse_env_output(r.output), expected_);
}

TEST_F(EmitRoundTrip, DeepspeedRefusesWhatItCannotCarry) {
  for (const std::string bad : {"=eno1 eno2", "a#b", "x\"y", "=eno1\n"}) {
    EmitInput in = in_;
    in.settings[0].setting.value = bad;
    EXPECT_THROW(emit(Format::kDeepspeed, in), UsageError) << bad;
  }
}

TEST_F(EmitRoundTrip, ShellIsValidAndSourcesBack) {
  std::string file = write("env.sh", emit(Format::kShell, in_));
  ASSERT_EQ(run("bash -n " + q(file)).exit_code, 0);
  ASSERT_EQ(run("sh -n " + q(file)).exit_code, 0);  // POSIX sh too (dash)
  auto r = run("env -i bash -c " + q("source " + q(file) + "; env"));
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(parse_env_output(r.output), expected_);
}

TEST_F(EmitRoundTrip, ShellQuotesWhatItMust) {
  EXPECT_EQ(sh_quote("=mlx5_0:1,mlx5_1:1"), "=mlx5_0:1,mlx5_1:1");
  EXPECT_EQ(sh_quote("it's $HOME"), "'it'\\''s $HOME'");
  EXPECT_EQ(sh_quote(""), "''");
  auto r = run("env -i bash -c " + q("X=" + sh_quote("it's $HOME `id`") + "; printf %s \"$X\""));
  EXPECT_EQ(r.output, "it's $HOME `id`");
}

TEST_F(EmitRoundTrip, Dotenv) {
  std::string text = emit(Format::kDotenv, in_);
  std::map<std::string, std::string> env;
  std::istringstream s(text);
  std::string line;
  while (std::getline(s, line)) {
    if (line.empty() || line[0] == '#') continue;
    env[line.substr(0, line.find('='))] = line.substr(line.find('=') + 1);
  }
  EXPECT_EQ(env, expected_);
  // Bash with allexport reads the same file the same way.
  std::string file = write("env", text);
  auto r = run("env -i bash -c " + q("set -a; . " + q(file) + "; env"));
  EXPECT_EQ(parse_env_output(r.output), expected_);
}

TEST_F(EmitRoundTrip, SlurmScriptAndExportLine) {
  std::string text = emit(Format::kSlurm, in_);
  std::string file = write("job.sh", text + "env\n");
  ASSERT_EQ(run("bash -n " + q(file)).exit_code, 0);
  auto r = run("env -i bash " + q(file));
  EXPECT_EQ(parse_env_output(r.output), expected_);
  // #SBATCH --export=ALL,K=V,...: every value without a comma, and identical to the exports.
  auto at = text.find("#SBATCH --export=ALL");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(at, text.find("\nexport ")) << "#SBATCH lines must precede commands";
  std::string opt = text.substr(at + 17, text.find('\n', at) - at - 17);
  std::map<std::string, std::string> sbatch;
  for (const auto& item : split(opt, ','))
    if (item != "ALL") sbatch[item.substr(0, item.find('='))] = item.substr(item.find('=') + 1);
  for (const auto& [k, v] : expected_) {
    if (v.find(',') != std::string::npos)
      EXPECT_EQ(sbatch.count(k), 0u) << k << " has a comma: sbatch would split it";
    else
      EXPECT_EQ(sbatch[k], v) << k;
  }
  EXPECT_EQ(sbatch.count("NCCL_IB_HCA"), 0u);
  EXPECT_NE(text.find("per host"), std::string::npos);  // says values differ between hosts
}

TEST_F(EmitRoundTrip, ApptainerEnvAndBinds) {
  std::string file = write("apptainer.sh", emit(Format::kApptainer, in_));
  ASSERT_EQ(run("bash -n " + q(file)).exit_code, 0);
  auto r = run("env -i bash -c " + q("source " + q(file) + "; env"));
  std::map<std::string, std::string> env;
  std::string flags;
  for (const auto& [k, v] : parse_env_output(r.output)) {
    if (k.rfind("APPTAINERENV_", 0) == 0) env[k.substr(13)] = v;
    if (k == "FABKIT_APPTAINER_FLAGS") flags = v;
  }
  EXPECT_EQ(env, expected_);
  EXPECT_EQ(flags, "--bind /opt/fabkit/topo.xml:/opt/fabkit/topo.xml:ro");
}

TEST_F(EmitRoundTrip, DockerWordsParseBack) {
  std::string file = write("docker.args", emit(Format::kDocker, in_));
  auto r = run("bash -c " + q("eval \"set -- $(cat " + q(file) + ")\"; printf '%s\\n' \"$@\""));
  ASSERT_EQ(r.exit_code, 0);
  std::vector<std::string> words = split(r.output, '\n');
  if (!words.empty() && words.back().empty()) words.pop_back();
  std::map<std::string, std::string> env;
  std::vector<std::string> flags;
  for (size_t i = 0; i + 1 < words.size(); i += 2) {
    if (words[i] == "-e")
      env[words[i + 1].substr(0, words[i + 1].find('='))] = words[i + 1].substr(words[i + 1].find('=') + 1);
    else
      flags.push_back(words[i] + " " + words[i + 1]);
  }
  EXPECT_EQ(env, expected_);
  std::vector<std::string> want = {"--network host", "--ulimit memlock=-1", "--shm-size 8g",
                                   "--device /dev/infiniband",
                                   "-v /opt/fabkit/topo.xml:/opt/fabkit/topo.xml:ro"};
  EXPECT_EQ(flags, want);
}

TEST_F(EmitRoundTrip, Json) {
  Json j = Json::parse(emit(Format::kJson, in_));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["host"], "roce-b");
  std::map<std::string, std::string> env;
  for (auto it = j["env"].begin(); it != j["env"].end(); ++it) env[it.key()] = it.value();
  EXPECT_EQ(env, expected_);
  bool saw_measured = false;
  for (const auto& s : j["settings"]) saw_measured = saw_measured || s["basis"] == "measured";
  EXPECT_TRUE(saw_measured);
}

TEST_F(EmitRoundTrip, EveryFormatRefusesAnInvalidValue) {
  EmitInput in = in_;
  in.settings[0].setting.value = "=eno1;reboot";
  for (Format f : {Format::kDeepspeed, Format::kShell, Format::kDotenv, Format::kSlurm,
                   Format::kApptainer, Format::kDocker, Format::kJson}) {
    try {
      emit(f, in);
      ADD_FAILURE() << to_string(f) << " accepted it";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(in.settings[0].name), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("=eno1;reboot"), std::string::npos);
    }
  }
}

// Issue #19, item 8: bind and device paths go into flags that split on ',' and ':'. A bind of
// "/etc,/srv" would reach apptainer as `--bind /etc,/srv:/etc,/srv:ro`: a read-write bind of
// /etc and another of /srv:/etc,... Each container format refuses what its flags would split,
// naming the path, the format and the flag; the other formats do not write these paths at all.
TEST_F(EmitRoundTrip, ContainerFormatsRefusePathsTheirFlagsWouldSplit) {
  auto message = [&](Format f, const EmitInput& in) -> std::string {
    try {
      emit(f, in);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  EmitInput comma = in_;
  comma.container.binds = {"/etc,/srv"};
  std::string e = message(Format::kApptainer, comma);
  EXPECT_NE(e.find("emit-env --format apptainer: container bind path \"/etc,/srv\" contains ','"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("--bind SRC:DST:OPTS,..."), std::string::npos) << e;
  // docker -v splits on ':' only (',' separates the mode's options, after the second ':').
  EXPECT_EQ(message(Format::kDocker, comma), "");
  EXPECT_NE(emit(Format::kDocker, comma).find("-v /etc,/srv:/etc,/srv:ro"), std::string::npos);

  EmitInput colon = in_;
  colon.container.binds = {"/opt/a:/etc"};
  for (Format f : {Format::kApptainer, Format::kDocker}) {
    e = message(f, colon);
    EXPECT_NE(e.find(std::string("emit-env --format ") + to_string(f) +
                     ": container bind path \"/opt/a:/etc\" contains ':'"),
              std::string::npos)
        << e;
  }
  EmitInput device = in_;
  device.container.devices = {"/dev/infiniband:/dev/sda"};
  e = message(Format::kDocker, device);
  EXPECT_NE(e.find("container device path \"/dev/infiniband:/dev/sda\" contains ':'"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("--device HOST:CONTAINER:PERMS"), std::string::npos) << e;
  EXPECT_EQ(message(Format::kApptainer, device), "");  // apptainer shares /dev: no flag for it
  // Formats without container flags carry the paths (json lists them) or do not mention them.
  for (Format f :
       {Format::kDeepspeed, Format::kShell, Format::kDotenv, Format::kSlurm, Format::kJson})
    for (const EmitInput* in : {&comma, &colon, &device})
      EXPECT_EQ(message(f, *in), "") << to_string(f);
}

// Values have a length limit (PATH_MAX), and so has the whole output: a 1 MiB value would break
// every exec once sourced (Linux refuses an environment string over 128 KiB), and so would many
// values near the limit together. Refused before any byte is produced.
TEST_F(EmitRoundTrip, ValueAndOutputLengthLimits) {
  const std::string longest = "/" + std::string(kMaxValueBytes - 1, 'a');
  EmitInput in = in_;
  int found = 0;
  for (auto& r : in.settings)
    if (r.name == "NCCL_TOPO_FILE") r.setting.value = longest, ++found;
  ASSERT_EQ(found, 1);
  for (Format f : {Format::kDeepspeed, Format::kShell, Format::kDotenv, Format::kSlurm,
                   Format::kApptainer, Format::kDocker, Format::kJson})
    EXPECT_NO_THROW(emit(f, in)) << to_string(f);

  for (const size_t bytes : {kMaxValueBytes + 1, size_t{1} << 20}) {
    for (auto& r : in.settings)
      if (r.name == "NCCL_TOPO_FILE") r.setting.value = "/" + std::string(bytes - 1, 'a');
    for (Format f : {Format::kDeepspeed, Format::kShell, Format::kDotenv, Format::kSlurm,
                     Format::kApptainer, Format::kDocker, Format::kJson}) {
      try {
        emit(f, in);
        ADD_FAILURE() << to_string(f) << " accepted a " << bytes << "-byte value";
      } catch (const UsageError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("NCCL_TOPO_FILE="), std::string::npos) << m;
        EXPECT_NE(m.find("is " + std::to_string(bytes) + " bytes long, over the limit of 4096"),
                  std::string::npos)
            << m;
        EXPECT_LT(m.size(), 1000u) << "the message quotes a shortened value";
      }
    }
  }

  // Every path within the limit, the whole over it: 20 binds of 4000 bytes.
  EmitInput many = in_;
  for (int i = 0; i < 20; ++i)
    many.container.binds.push_back("/" + std::to_string(i) + std::string(3990, 'b'));
  for (Format f : {Format::kApptainer, Format::kDocker, Format::kJson}) {
    try {
      emit(f, many);
      ADD_FAILURE() << to_string(f) << " wrote more than " << kMaxEmitBytes << " bytes";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("emit-env --format ") + to_string(f) +
                                           ": the output would be "),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("over the limit of 65536 bytes"), std::string::npos);
    }
  }
  EXPECT_LE(emit(Format::kDeepspeed, many).size(), kMaxEmitBytes);  // writes no binds
}

TEST(EmitFormats, NamesRoundTrip) {
  for (const auto& name : split(kFormatList(), '|')) {
    auto f = format_from_string(name);
    ASSERT_TRUE(f) << name;
    EXPECT_EQ(to_string(*f), name);
  }
  EXPECT_FALSE(format_from_string("yaml"));
}

}  // namespace
}  // namespace fabkit::profile
