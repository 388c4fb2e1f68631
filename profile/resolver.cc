#include "profile/resolver.h"

#include <algorithm>

#include "common/errors.h"
#include "profile/profile.h"

namespace fabkit::profile {
namespace {

std::string short_name(const std::string& h) { return h.substr(0, h.find('.')); }

std::vector<std::string> profile_hosts(const Profile& p) {
  std::vector<std::string> out;
  for (const auto& n : p.nodes) out.push_back(n.hostname);
  for (const auto& [h, s] : p.hosts)
    if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  return out;
}

}  // namespace

std::optional<std::string> match_host(const Profile& p, const std::string& host) {
  auto hosts = profile_hosts(p);
  for (const auto& h : hosts)
    if (h == host) return h;
  std::optional<std::string> found;
  for (const auto& h : hosts) {
    if (short_name(h) != short_name(host)) continue;
    if (found) return std::nullopt;  // ambiguous: node01.a and node01.b
    found = h;
  }
  return found;
}

std::vector<ResolvedSetting> resolve_settings(const Profile& p, const std::string& host) {
  auto matched = match_host(p, host);
  if (!matched && !p.hosts.empty()) {
    std::string list;
    for (const auto& h : profile_hosts(p)) list += (list.empty() ? "" : ", ") + h;
    throw UsageError("host '" + host + "' is not in the profile (it covers: " + list +
                     ") and the profile has per-host settings; pass --host NAME, or rebuild it "
                     "with this host's `fabcheck node --json` report");
  }
  const std::map<std::string, Setting>* overrides = nullptr;
  if (matched) {
    auto it = p.hosts.find(*matched);
    if (it != p.hosts.end()) overrides = &it->second;
  }
  std::vector<ResolvedSetting> out;
  for (const auto& name : known_variables()) {
    if (overrides) {
      auto it = overrides->find(name);
      if (it != overrides->end()) {
        out.push_back({name, it->second, true});
        continue;
      }
    }
    auto it = p.settings.find(name);
    if (it != p.settings.end()) out.push_back({name, it->second, false});
  }
  return out;
}

std::map<std::string, std::string> resolve_env(const Profile& p, const std::string& host) {
  std::map<std::string, std::string> env;
  for (const auto& r : resolve_settings(p, host))
    if (r.setting.value) env[r.name] = *r.setting.value;
  return env;
}

}  // namespace fabkit::profile
