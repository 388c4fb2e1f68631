// The profile's public API (docs/json/): fabtrain and fabcheck use these three.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/finding.h"
#include "common/report.h"
#include "profile/profile_model.h"

namespace fabkit::profile {

// Reads and checks cluster.json; throws UsageError naming the field and value.
Profile load_profile(const std::filesystem::path& path);

// The environment for host: variable -> value (unset choices are absent). Throws UsageError when
// host is unknown to a profile with per-host settings (resolver.h).
std::map<std::string, std::string> resolve_env(const Profile& p, const std::string& host);

// Checks this node (its `fabcheck node` report) against the profile: interface present and up,
// HCA ports ACTIVE with the recorded link layer and rate, memlock, topology file. Pure.
std::vector<Finding> validate_node(const Profile& p, const Report& node_report,
                                   const std::string& host);

}  // namespace fabkit::profile

// Callers of the contract use fabkit::load_profile etc. as well.
namespace fabkit {
using profile::load_profile;
using profile::Profile;
using profile::resolve_env;
using profile::validate_node;
}  // namespace fabkit
