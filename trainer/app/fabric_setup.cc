#include "trainer/app/fabric_setup.h"

#include <unistd.h>

#include <cstdlib>

#include "common/environment.h"
#include "probes/node_probe.h"
#include "profile/profile.h"

namespace fabkit::trainer {

FabricSetup setup_fabric(const std::string& profile_path, bool skip_validate, const TrainLog& log) {
  FabricSetup s;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  s.host = host;
  if (profile_path.empty()) {
    log.info("no --profile: running with defaults (this process's environment as it is, no node check)");
  } else {
    Profile p = load_profile(profile_path);
    const std::string short_host = s.host.substr(0, s.host.find('.'));
    for (const auto& node : p.nodes) {
      if (node.hostname != s.host && node.hostname != short_host) continue;
      for (const auto& l : node.locality) s.locality.push_back({l.gpu_bus_id, l.nearest_nic, l.path_level});
    }
    for (const auto& [name, value] : resolve_env(p, s.host)) {
      const char* before = std::getenv(name.c_str());
      if (before && value != before) {
        log.info("profile overrides " + name + "='" + before + "' with '" + value + "'");
      }
      setenv(name.c_str(), value.c_str(), 1);
      s.applied.push_back(name + "=" + value);
    }
    log.info("profile " + profile_path + " for host " + s.host + ": applied " + std::to_string(s.applied.size()) +
             " variables");
    for (const auto& a : s.applied) log.info("  " + a);
    if (skip_validate) {
      log.warn("--skip-validate: this node is NOT checked against " + profile_path);
    } else {
      ProbeContext ctx;
      ctx.env = Environment::from_process();
      ctx.roots = SystemRoots::live_system(ctx.env.get("HOME").value_or(""));
      Report node = probe_this_node(ctx);  // the same probe path as `fabcheck node` and the agents
      s.findings = validate_node(p, node, s.host);
      if (worst_severity(s.findings) >= Severity::kWarn) {
        std::string msg = "node " + s.host + " does not match the profile " + profile_path + ":";
        for (const auto& f : s.findings) {
          if (f.severity < Severity::kWarn) continue;
          msg += "\n  [" + std::string(to_string(f.severity)) + "] " + f.code + " " + f.subject + ": " + f.message;
          if (!f.fix.empty()) msg += "\n      fix: " + f.fix;
        }
        msg += "\nrefusing to start (fix the node, rebuild the profile, or pass --skip-validate)";
        throw ValidationRefused(msg);
      }
      log.info("node " + s.host + " matches the profile (" + std::to_string(s.findings.size()) + " findings, none at warn)");
    }
  }
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) s.gloo_socket_ifname = ifname;
  return s;
}

}  // namespace fabkit::trainer
