// fabcheck emit-env: the profile's settings for this host in the format a launcher reads.
#include <iostream>

#include "cli/command.h"
#include "common/errors.h"
#include "fabkit/config.h"
#include "probes/node_probe.h"
#include "profile/builder.h"
#include "profile/local_host.h"
#include "profile/profile_reader.h"
#include "profile/value_rules.h"
#include "reports/env/emitter.h"

namespace fabkit::cli {
namespace {

struct EmitArgs {
  std::string profile;
  std::string host;
  std::string format = "deepspeed";
  std::string out;
  std::string sysroot;
};

int run_emit_env(const EmitArgs& a) {
  auto format = reports::env::format_from_string(a.format);
  if (!format)
    throw UsageError("--format " + profile::quote_for_message(a.format) + ": not one of " +
                     reports::env::kFormatList());
  if (!a.host.empty())
    if (auto e = profile::check_hostname(a.host))
      throw UsageError("--host " + profile::quote_for_message(a.host) + " " + *e);
  check_stdout_or_path("--out", a.out);
  profile::Profile p;
  std::string source, host = a.host;
  if (!a.profile.empty()) {
    if (!a.sysroot.empty()) throw UsageError("--sysroot applies only without --profile");
    p = profile::load_profile(a.profile);
    source = a.profile + " (" + p.provenance.content_hash + ")";
    if (host.empty()) host = profile::local_hostname();
  } else {
    // No profile: this node alone, every choice unmeasured (no pair measurement backs it).
    if (!a.sysroot.empty() && a.host.empty())
      throw UsageError("--sysroot needs --host NAME (the tree has no host name)");
    Report r = probe_this_node(node_probe_context(a.sysroot));
    if (host.empty()) host = profile::local_hostname();
    r.hostname = host;
    profile::BuildOptions o;
    o.unmeasured = true;
    o.created_on = host;
    p = profile::build_profile({{r, "live probe", true}}, o);
    source = "a live probe of this node (no profile: unmeasured)";
  }
  reports::env::EmitInput in;
  in.host = host;
  in.source = source;
  in.settings = profile::resolve_settings(p, host);
  in.container = p.container;
  in.profile_has_per_host = !p.hosts.empty();
  std::string text = reports::env::emit(*format, in);
  write_output("--out", a.out, text);
  return kExitClean;
}

}  // namespace

void register_emit_env_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<EmitArgs>();
  auto* sub = app.add_subcommand("emit-env", "Print the profile's environment for this host "
                                             "(default: DeepSpeed .deepspeed_env lines)");
  sub->add_option("--profile", args->profile, "cluster.json; without it, probe this node "
                                              "(every choice unmeasured)");
  sub->add_option("--host", args->host, "Resolve for this host (default: this host's name)");
  sub->add_option("--format", args->format,
                  std::string("Output format: ") + reports::env::kFormatList());
  sub->add_option("--out", args->out, "Write here (temp file + rename) instead of stdout");
  sub->add_option("--sysroot", args->sysroot, "Without --profile: probe a fixture tree instead of /");
  sub->callback([args, exit_code] {
    *exit_code = run_command("emit-env", false, [&] { return run_emit_env(*args); });
  });
}

}  // namespace fabkit::cli
