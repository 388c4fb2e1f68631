// Fixture helpers for the profile tests: hand-written node/pair reports (tests/fixtures/profile)
// and a way to run bash on emitted files.
#pragma once

#include <string>
#include <vector>

#include "common/json.h"
#include "common/report.h"
#include "profile/builder.h"
#include "profile/profile_model.h"

namespace fabkit::profile::testing {

Json fixture_json(const std::string& name);  // tests/fixtures/profile/<name>
Report report_from(const Json& j);
BuildInput input(const std::string& fixture_name);
BuildInput input_json(const Json& report, const std::string& source);
// Builds from fixtures with a fixed created_at so outputs are reproducible.
Profile build(const std::vector<std::string>& fixtures, BuildOptions o = {});

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout (stderr goes to stdout when merge_stderr)
};
RunResult run(const std::string& shell_command, bool merge_stderr = false);
// Single-quotes for building test shell commands.
std::string q(const std::string& s);
// KEY=VALUE lines of `env` output -> map, dropping the variables bash itself sets.
std::map<std::string, std::string> parse_env_output(const std::string& text);

}  // namespace fabkit::profile::testing
