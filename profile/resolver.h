// Resolution for one host: the cluster-wide settings overlaid by that host's overrides.
#pragma once

#include <string>
#include <vector>

#include "profile/profile_model.h"

namespace fabkit::profile {

struct ResolvedSetting {
  std::string name;
  Setting setting;
  bool per_host = false;  // came from hosts.<host>
};

// The profile's name for host: an exact match in nodes[] or hosts{}, else the one entry whose
// short name (before the first '.') equals host's short name ("node01" vs
// "node01.cluster.local"). nullopt when none or ambiguous.
std::optional<std::string> match_host(const Profile& p, const std::string& host);

// Every setting for host in emission order, unset ones (value nullopt) included. Throws
// UsageError when host is not in the profile and the profile has per-host settings (we cannot
// know that host's interface); a profile without per-host settings applies to any host.
std::vector<ResolvedSetting> resolve_settings(const Profile& p, const std::string& host);

}  // namespace fabkit::profile
