#include "test_util.h"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "reports/report_render.h"
#include "tests/support/ttar.h"

namespace fabkit::profile::testing {

Json fixture_json(const std::string& name) {
  auto path = fabkit::testing::project_fixtures() / "profile" / name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing fixture " + path.string());
  return Json::parse(in);
}

Report report_from(const Json& j) { return report_from_json(j); }

BuildInput input(const std::string& fixture_name) {
  return {report_from(fixture_json(fixture_name)), fixture_name, false};
}

BuildInput input_json(const Json& report, const std::string& source) {
  return {report_from(report), source, false};
}

Profile build(const std::vector<std::string>& fixtures, BuildOptions o) {
  std::vector<BuildInput> inputs;
  for (const auto& f : fixtures) inputs.push_back(input(f));
  if (o.created_at.empty()) o.created_at = "2026-11-21T12:00:00Z";
  if (o.created_on.empty()) o.created_on = "login-01";
  return build_profile(inputs, o);
}

RunResult run(const std::string& cmd, bool merge_stderr) {
  RunResult r;
  std::string full = merge_stderr ? "(" + cmd + ") 2>&1" : cmd;
  FILE* p = popen(full.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string q(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::map<std::string, std::string> parse_env_output(const std::string& text) {
  std::map<std::string, std::string> env;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string k = line.substr(0, eq);
    if (k == "PWD" || k == "SHLVL" || k == "_" || k == "OLDPWD") continue;
    env[k] = line.substr(eq + 1);
  }
  return env;
}

}  // namespace fabkit::profile::testing
