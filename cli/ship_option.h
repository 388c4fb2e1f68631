// --ship and --ship-dir, shared by `fabcheck pair` and `fabcheck cluster`: the controller's own
// binary goes to each host and runs there as the agent (fabric/launch/ship.h, docs/install.md).
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "fabric/launch/ship.h"

namespace fabkit::cli {

struct ShipArgs {
  bool ship = false;
  std::string dir;  // on the hosts; "" = $TMPDIR or /tmp
};

void add_ship_options(CLI::App* sub, ShipArgs* a);

// Null without --ship. Reads and hashes /proc/self/exe; throws UsageError (--ship with
// --agent-path, an unreadable binary, srun outside an allocation, a bad --ship-dir).
std::shared_ptr<const launch::Shipment> make_shipment(const ShipArgs& a,
                                                      const std::string& agent_path_flag,
                                                      const launch::LauncherSpec& spec,
                                                      int timeout_ms);

// In a copy --ship started (FABKIT_SHIPPED_DIR set by the receiving script): checks that this
// binary lies in that directory and that the directory is private (common/private_dir.h: ours,
// 0700, not a symlink, no parent others could swap). Returns whether this is a shipped copy;
// throws UsageError naming the directory otherwise.
bool verify_shipped_copy();

}  // namespace fabkit::cli
