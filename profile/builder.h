// Building a profile from node and pair reports (`fabcheck profile`), or from a live probe of
// this node alone (`fabcheck emit-env` without --profile: every choice "unmeasured").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/report.h"
#include "profile/profile_model.h"

namespace fabkit::profile {

struct BuildInput {
  Report report;
  std::string source;  // file path, or "live probe"
  bool live = false;
};

struct BuildOptions {
  std::optional<std::string> nccl_version;  // --nccl-version; else a pair report's; else unknown
  std::optional<int> master_port;           // --master-port
  bool unmeasured = false;                  // live, no profile: mark every choice unmeasured
  std::string created_on;                   // this host
  std::string created_at;                   // RFC 3339; empty = now
};

// Throws UsageError when no input is a node report, on duplicate hosts, or on inputs whose
// fields have the wrong type.
Profile build_profile(const std::vector<BuildInput>& inputs, const BuildOptions& options);

// "2.18.3" < "2.21"? Numeric, component-wise; nullopt when unparsable.
std::optional<bool> version_less(const std::string& version, const std::string& than);

}  // namespace fabkit::profile
