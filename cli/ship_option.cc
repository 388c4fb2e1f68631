#include "cli/ship_option.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/errors.h"
#include "common/private_dir.h"

namespace fabkit::cli {

void add_ship_options(CLI::App* sub, ShipArgs* a) {
  sub->add_flag("--ship", a->ship,
                "Send this fabcheck binary to each host and run it there (srun: sbcast; ssh and "
                "templates: the launcher's stdin), checked by SHA-256 and removed afterwards");
  sub->add_option("--ship-dir", a->dir,
                  "With --ship: the directory on the hosts for the private copy (default: "
                  "$TMPDIR or /tmp); it and every directory above it must be owned by root or "
                  "the login user and not writable by others, or sticky like /tmp");
}

std::shared_ptr<const launch::Shipment> make_shipment(const ShipArgs& a,
                                                      const std::string& agent_path_flag,
                                                      const launch::LauncherSpec& spec,
                                                      int timeout_ms) {
  if (!a.ship) {
    if (!a.dir.empty()) throw UsageError("--ship-dir is for --ship; add --ship or drop --ship-dir");
    return nullptr;
  }
  if (!agent_path_flag.empty())
    throw UsageError(
        "--ship runs this controller's own binary on the hosts; --agent-path names an "
        "installed one: give one of them");
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw UsageError("--ship: cannot find this binary's path (/proc/self/exe): " + ec.message());
  // sbcast of a large binary to many nodes takes longer than one control step.
  return std::make_shared<const launch::Shipment>(launch::read_ship_binary(self.string()), spec,
                                                  a.dir, std::max(60000, 6 * timeout_ms));
}

bool verify_shipped_copy() {
  const char* dir = std::getenv(launch::kShippedDirEnv);
  if (dir == nullptr || *dir == '\0') return false;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || self.parent_path() != std::filesystem::path(dir))
    throw UsageError(std::string(launch::kShippedDirEnv) + "=" + dir + ": this fabcheck (" +
                     (ec ? "unknown path" : self.string()) +
                     ") is not the copy --ship put there; unset it when running fabcheck yourself");
  PrivateDirOptions o;
  o.what = "--ship copy's directory";
  o.alternative = "give --ship a directory of your own with --ship-dir";
  (void)open_private_dir(dir, o);
  return true;
}

}  // namespace fabkit::cli
