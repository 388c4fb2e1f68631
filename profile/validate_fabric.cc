// Drift of the fabric stack between the profile's nodes and this one: EFA device count, instance
// type, libfabric and NCCL net plugin versions. Nodes that run one job must agree: a node with
// fewer EFA devices slows every collective to its rails, and a node with another plugin or
// libfabric build is the usual cause of "works on all nodes but one".
#include "profile/validate_fabric.h"

#include <functional>
#include <optional>
#include <set>
#include <string>

namespace fabkit::profile {
namespace {

std::optional<std::string> text(const Json* sec, const char* key) {
  if (!sec || !sec->contains(key) || !(*sec)[key].is_string()) return std::nullopt;
  return (*sec)[key].get<std::string>();
}

// The value to compare with: this node's recorded one, else the one every recorded node shares.
template <typename T>
std::optional<T> expected(const Profile& p, const NodeEntry* node,
                          std::function<std::optional<T>(const NodeEntry&)> get,
                          std::string* whose) {
  if (node && get(*node)) {
    *whose = "the profile's entry for " + node->hostname;
    return get(*node);
  }
  std::optional<T> common;
  for (const auto& n : p.nodes) {
    auto v = get(n);
    if (!v) continue;
    if (common && *common != *v) return std::nullopt;  // the profile's nodes disagree already
    common = v;
  }
  *whose = "every node the profile records";
  return common;
}

void skipped(std::vector<Finding>& out, const std::string& what, const std::string& sec) {
  out.push_back(info("profile.check_skipped", what,
                     "not checked: the node report has no '" + sec + "' section",
                     "run a fabcheck built with the " + sec + " probe"));
}

void check_version(const Profile& p, const NodeEntry* node, const Report& r, const char* sec_name,
                   std::optional<std::string> NodeEntry::*field, const char* code,
                   const std::string& what, const std::string& fix, std::vector<Finding>& out) {
  std::string whose;
  auto want = expected<std::string>(
      p, node, [field](const NodeEntry& n) { return n.*field; }, &whose);
  if (!want) return;
  const Json* sec = find_section(r, sec_name);
  if (!sec) return skipped(out, what, sec_name);
  auto now = text(sec, "version");
  if (now == want) return;
  out.push_back(warn(code, what,
                     what + " is " + (now ? *now : std::string("not found")) + " here, " + *want +
                         " in " + whose + ": nodes of one job should run the same build",
                     fix));
}

}  // namespace

void check_fabric_drift(const Profile& p, const NodeEntry* node, const Report& r,
                        std::vector<Finding>& out) {
  std::string whose;
  const auto want_devices = expected<int>(
      p, node, [](const NodeEntry& n) { return n.efa_devices; }, &whose);
  const Json* efa = find_section(r, "efa");
  if (want_devices && !efa) skipped(out, "EFA devices", "efa");
  if (want_devices && efa) {
    const Json& c = efa->contains("device_count") ? (*efa)["device_count"] : Json();
    const int now = c.is_number_integer() ? c.get<int>() : 0;
    if (now != *want_devices)
      out.push_back((now < *want_devices ? fail : warn)(
          "profile.efa_devices_drifted", "EFA devices",
          "this node has " + std::to_string(now) + " EFA devices, " +
              std::to_string(*want_devices) + " in " + whose +
              (now < *want_devices ? ": NCCL runs on fewer rails here, and every collective of "
                                     "the job waits for this node"
                                   : ""),
          now < *want_devices
              ? "attach the missing EFA interfaces (or replace the instance); `fabcheck node` "
                "names them (efa.devices_missing)"
              : "rebuild the profile if the instance was changed on purpose"));
  }
  const auto want_type = expected<std::string>(
      p, node, [](const NodeEntry& n) { return n.instance_type; }, &whose);
  if (want_type && efa) {
    auto now = text(efa, "product_name");
    if (now != want_type)
      out.push_back(warn("profile.instance_type_drifted", "instance type",
                         "this node is " + now.value_or("of unknown type") + ", " + *want_type +
                             " in " + whose +
                             ": the profile's EFA settings were chosen for that "
                             "type",
                         "rebuild the profile with this node's report (`fabcheck profile`), or run "
                         "the job on " +
                             *want_type + " nodes only"));
  }
  check_version(p, node, r, "libfabric", &NodeEntry::libfabric_version,
                "profile.libfabric_version_drifted", "libfabric",
                "install the same libfabric on every node (the aws-efa-installer version), or "
                "rebuild the profile",
                out);
  check_version(p, node, r, "nccl_net_plugin", &NodeEntry::net_plugin_version,
                "profile.net_plugin_version_drifted", "NCCL net plugin",
                "install the same aws-ofi-nccl (NCCL net plugin) on every node, or rebuild the "
                "profile",
                out);
}

}  // namespace fabkit::profile
