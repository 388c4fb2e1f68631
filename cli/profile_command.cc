// fabcheck profile: node and pair reports (or a live probe of this node) -> cluster.json.
#include <iostream>

#include "cli/command.h"
#include "common/errors.h"
#include "common/input_file.h"
#include "common/json_read.h"
#include "fabkit/config.h"
#include "probes/node_probe.h"
#include "profile/builder.h"
#include "profile/local_host.h"
#include "profile/profile_document.h"
#include "profile/profile_reader.h"
#include "reports/input_document.h"
#include "reports/report_render.h"

namespace fabkit::cli {
namespace {

struct ProfileArgs {
  std::string out;
  std::vector<std::string> inputs;
  bool live = false;
  std::string nccl_version;
  int master_port = 0;
};

profile::BuildInput read_report(const std::string& path) {
  const std::string text =
      read_input(path, {"", reports::kMaxReportBytes,
                        "give the output of `fabcheck node --json` or `fabcheck pair --json`"});
  Json j;
  try {
    j = parse_json(text, path);
  } catch (const JsonReadError& e) {
    throw UsageError(std::string(e.what()) +
                     "; give the output of `fabcheck node --json` or `fabcheck pair --json`");
  }
  try {
    return {report_from_json(j), path, false};
  } catch (const std::invalid_argument& e) {
    throw UsageError(path + ": " + e.what());
  }
}

int run_profile(const ProfileArgs& a) {
  check_stdout_or_path("--out", a.out);
  std::vector<profile::BuildInput> inputs;
  for (const auto& path : a.inputs) inputs.push_back(read_report(path));
  if (a.live || a.inputs.empty()) {
    Report r = probe_this_node(node_probe_context(""));
    inputs.push_back({r, "live probe", true});
  }
  profile::BuildOptions o;
  if (!a.nccl_version.empty()) o.nccl_version = a.nccl_version;
  if (a.master_port != 0) o.master_port = a.master_port;
  o.created_on = profile::local_hostname();
  std::string text = profile::serialize_profile(profile::build_profile(inputs, o));
  // Never write what our own reader would refuse.
  try {
    profile::parse_profile(text, "generated profile");
  } catch (const UsageError& e) {
    throw InternalError(std::string("built a profile the reader refuses: ") + e.what());
  }
  write_output("--out", a.out, text);
  return kExitClean;
}

}  // namespace

void register_profile_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ProfileArgs>();
  auto* sub = app.add_subcommand(
      "profile", "Build cluster.json from node/pair reports (--json outputs) or a live probe");
  sub->add_option("inputs", args->inputs, "Report files: `fabcheck node --json`, `fabcheck pair --json`");
  sub->add_option("--out", args->out, "Write the profile here (temp file + rename); default stdout");
  sub->add_flag("--live", args->live, "Also probe this node (the default when no inputs are given)");
  sub->add_option("--nccl-version", args->nccl_version,
                  "NCCL version the jobs use (decides NCCL_IB_GID_INDEX); default: from a pair "
                  "report, else unknown");
  sub->add_option("--master-port", args->master_port, "Rendezvous port (default 29500)")
      ->check(CLI::Range(1, 65535));
  sub->callback([args, exit_code] {
    *exit_code = run_command("profile", false, [&] { return run_profile(*args); });
  });
}

}  // namespace fabkit::cli
