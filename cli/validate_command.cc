// fabcheck validate: the profile's schema, then this node against it. Exit codes as `node`.
// Meant to run as a Slurm prolog: one node probe, no network.
#include <iostream>

#include "cli/command.h"
#include "common/errors.h"
#include "common/root_open.h"
#include "fabkit/config.h"
#include "probes/node_probe.h"
#include "profile/local_host.h"
#include "profile/profile.h"
#include "profile/resolver.h"
#include "profile/value_rules.h"
#include "reports/report_render.h"

namespace fabkit::cli {
namespace {

struct ValidateArgs {
  std::string profile;
  std::string host;
  bool json = false;
  std::string sysroot;
};

int run_validate(const ValidateArgs& a) {
  if (!a.host.empty())
    if (auto e = profile::check_hostname(a.host))
      throw UsageError("--host " + profile::quote_for_message(a.host) + " " + *e);
  Profile p = load_profile(a.profile);
  if (!a.sysroot.empty() && a.host.empty())
    throw UsageError("--sysroot needs --host NAME (the tree has no host name)");
  ProbeContext ctx = node_probe_context(a.sysroot);
  std::string host = a.host.empty() ? profile::local_hostname() : a.host;
  auto name = profile::match_host(p, host);
  std::map<std::string, std::string> env;
  if (name || p.hosts.empty()) env = resolve_env(p, name.value_or(host));
  auto topo = env.find("NCCL_TOPO_FILE");
  // The profile's file, looked up through the roots so a fixture tree answers under --sysroot.
  // Only a present file goes to the probe as --topo: a missing one is the profile.topo_file_missing
  // finding (exit 1), not the usage error a mistyped --topo is.
  bool topo_present = false;
  if (topo != env.end()) {
    std::filesystem::path on_disk = ctx.roots.root / std::filesystem::path(topo->second).relative_path();
    topo_present = path_is_regular_file(on_disk);
    if (topo_present) ctx.options.topo_file = on_disk;
  }
  Report node = probe_this_node(ctx);
  if (topo != env.end())
    node.sections.push_back({"profile_files",
                             {{"topo_file", {{"path", topo->second}, {"present", topo_present}}}}});
  Report r;
  r.kind = "validate";
  r.hostname = host;
  r.generated_at = utc_now_rfc3339();
  r.findings = validate_node(p, node, host);
  r.sections = node.sections;
  return reports::render_report(r, a.json, std::cout);
}

}  // namespace

void register_validate_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ValidateArgs>();
  auto* sub = app.add_subcommand("validate", "Check cluster.json, then this node against it "
                                             "(fast enough for a Slurm prolog)");
  sub->add_option("profile", args->profile, "cluster.json")->required();
  sub->add_option("--host", args->host, "Check as this host (default: this host's name)");
  sub->add_flag("--json", args->json, "Print the report as JSON");
  sub->add_option("--sysroot", args->sysroot, "Probe a fixture tree instead of /");
  sub->callback([args, exit_code] {
    *exit_code = run_command("validate", args->json, [&] { return run_validate(*args); });
  });
}

}  // namespace fabkit::cli
