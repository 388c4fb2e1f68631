#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <set>

#include "common/file_reader.h"
#include "probes/nccl_env/nccl_env_facts.h"

namespace fabkit::probes {
namespace {

// Plugins read their own NCCL_-prefixed variables (Google's TCPX/FasTrak, the SHARP plugin).
const char* kPluginPrefixes[] = {"NCCL_GPUDIRECTTCPX_", "NCCL_FASTRAK_", "NCCL_TCPX_",
                                 "NCCL_SHARP_", "NCCL_GIB_", "NCCL_OFI_", "NCCL_TESTS_"};

// NCCL_* names that container images and build tools set and NCCL itself never reads: NVIDIA's
// CUDA and NGC images export NCCL_VERSION (beside NV_LIBNCCL_* and NCCL_LIB/INCLUDE paths), and
// PyTorch's and Horovod's builds read NCCL_ROOT/NCCL_HOME/NCCL_INCLUDE_DIR/NCCL_LIB_DIR. Flagging
// them made `fabcheck node` exit 1 in every NVIDIA container.
const char* kImageVariables[] = {"NCCL_VERSION",     "NCCL_HOME",    "NCCL_ROOT",       "NCCL_ROOT_DIR",
                                 "NCCL_INCLUDE_DIR", "NCCL_LIB_DIR", "NCCL_LIBRARY",    "NCCL_LIBRARIES",
                                 "NCCL_DIR",         "NCCL_PATH",    "NCCL_INSTALL_DIR"};

std::string where(const NcclVariable& v) {
  return v.source == "environment" ? "the environment" : v.source;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// What ncclLoadParam makes of the text: strtoll(str, NULL, 0) (base 0: "0x10" is 16, "010" is 8),
// trailing junk ignored, no digits -> 0, overflow -> the default.
void judge_int(const NcclVariable& v, std::vector<Finding>& out) {
  const std::string& s = v.value;
  if (s.empty()) return;  // NCCL treats an empty value as unset
  errno = 0;
  char* end = nullptr;
  long long n = std::strtoll(s.c_str(), &end, 0);
  std::string fix = "set " + v.name + " to a decimal integer in " + where(v);
  if (end == s.c_str()) {
    out.push_back(warn("nccl_env.bad_value", v.name,
                       v.name + "='" + s + "' (from " + where(v) +
                           ") is not a number; NCCL reads it with strtoll() as 0 without a "
                           "warning" +
                           (v.name == "NCCL_IB_GID_INDEX"
                                ? " (GID 0 is the link-local RoCE v1 GID on RoCE ports)"
                                : ""),
                       fix));
  } else if (errno == ERANGE) {
    out.push_back(warn("nccl_env.bad_value", v.name,
                       v.name + "='" + s + "' is out of range; NCCL falls back to its default",
                       fix));
  } else if (*end != '\0') {
    out.push_back(warn("nccl_env.bad_value", v.name,
                       v.name + "='" + s + "' has trailing text '" + std::string(end) +
                           "'; NCCL silently uses " + std::to_string(n),
                       fix));
  } else if (s.size() > 1 && s[0] == '0' && s[1] != 'x' && s[1] != 'X' && n != 0) {
    out.push_back(warn("nccl_env.bad_value", v.name,
                       v.name + "='" + s + "' has a leading zero: NCCL parses it as octal, " +
                           std::to_string(n),
                       "drop the leading zero"));
  }
}

void judge_value(const NcclVariable& v, const NcclKnownVar& k, std::vector<Finding>& out) {
  if (k.kind == NcclValueKind::kInt || k.kind == NcclValueKind::kBool01) {
    judge_int(v, out);
    return;
  }
  if (k.kind == NcclValueKind::kEnum && !v.value.empty()) {
    std::string u = upper(v.value);
    for (const auto& w : split(k.allowed, '|'))
      if (u == w) return;
    out.push_back(warn("nccl_env.bad_value", v.name,
                       v.name + "='" + v.value + "' (from " + where(v) + ") is not one of " +
                           k.allowed + "; NCCL ignores it and keeps its default",
                       "set " + v.name + " to one of " + k.allowed));
  }
}

bool has_active_ib(const std::vector<RdmaPortBrief>& ports, std::string* which) {
  for (const auto& p : ports)
    if (p.active) {
      *which += (which->empty() ? "" : ", ") + p.device + ":" + std::to_string(p.port) + " (" +
                p.link_layer + ")";
    }
  return !which->empty();
}

void judge_ib_hca(const NcclVariable& v, const std::vector<RdmaPortBrief>& ports,
                  std::vector<Finding>& out) {
  NcclList l = parse_nccl_list(v.value, kNcclMaxHcaEntries);
  for (const auto& issue : l.issues)
    out.push_back(warn("nccl_env.ib_hca_grammar", "NCCL_IB_HCA", issue,
                       "write NCCL_IB_HCA as NCCL reads it: '=mlx5_0:1,mlx5_1:1' (exact "
                       "device:port), '^=mlx5_2' (exclude)"));
  std::vector<std::string> devices;
  for (const auto& p : ports)
    if (std::find(devices.begin(), devices.end(), p.device) == devices.end())
      devices.push_back(p.device);
  if (!l.exclude)
    for (const auto& e : nccl_list_unmatched(l, devices))
      out.push_back(fail("nccl_env.ib_hca_absent", "NCCL_IB_HCA",
                         "NCCL_IB_HCA=" + v.value + " (from " + where(v) + ") names '" + e +
                             "', which matches no RDMA device here" +
                             (devices.empty() ? " (this node has none)" : ""),
                         "list the devices of `ibv_devinfo -l` / ls /sys/class/infiniband"));
  for (const auto& a : nccl_list_ambiguities(l, devices))
    if (a.names_one_device) {
      std::string all;
      for (const auto& m : a.matched) all += (all.empty() ? "" : ", ") + m;
      std::string port = a.entry.find(':') == std::string::npos ? ":1" : "";
      out.push_back(warn("nccl_env.ib_hca_prefix", "NCCL_IB_HCA",
                         "NCCL_IB_HCA entry '" + a.entry + "' is a prefix: NCCL also uses " + all,
                         "export NCCL_IB_HCA==" + a.entry + port +
                             "  (a leading '=' matches exact names; list every HCA you want)"));
    }
  // Every active port excluded or not selected is bandwidth left unused.
  bool any_selected = false;
  for (const auto& p : ports)
    any_selected = any_selected || (p.active && nccl_list_selects(l, p.device, p.port));
  if (!ports.empty() && !any_selected)
    out.push_back(fail("nccl_env.ib_hca_selects_nothing", "NCCL_IB_HCA",
                       "NCCL_IB_HCA=" + v.value + " selects no active RDMA port; NCCL falls back "
                       "to TCP sockets (NET/Socket) without an error",
                       "unset NCCL_IB_HCA or name the active ports, e.g. =mlx5_0:1"));
}

}  // namespace

std::vector<Finding> judge_nccl_env(const NcclEnvFacts& f,
                                    const std::optional<std::vector<RdmaPortBrief>>& rdma_ports) {
  std::vector<Finding> out;
  for (const auto& file : f.files_read) {
    if (file.error)
      out.push_back(warn("nccl_env.conf_unreadable", file.path,
                         "NCCL config file exists but cannot be read: " + *file.error +
                             "; NCCL skips it silently",
                         "chmod a+r " + file.path));
    for (const auto& issue : file.issues)
      out.push_back(warn("nccl_env.conf_line", file.path, issue,
                         "write KEY=VALUE lines without spaces, '#' in column 1 for comments"));
  }
  if (!f.files_read.empty() && f.files_read.front().role == "NCCL_CONF_FILE" &&
      !f.files_read.front().present)
    out.push_back(warn("nccl_env.conf_file_missing", "NCCL_CONF_FILE",
                       "NCCL_CONF_FILE=" + f.files_read.front().path +
                           " does not exist; NCCL skips it silently (and does not read "
                           "~/.nccl.conf instead)",
                       "point NCCL_CONF_FILE at an existing file or unset it"));

  for (const auto& v : f.variables) {
    for (const auto& o : v.overridden)
      out.push_back(info("nccl_env.overridden", v.name,
                         v.name + "=" + v.value + " from " + where(v) + " wins over " + o));
    if (!starts_with(v.name, "NCCL_")) continue;
    if (const NcclKnownVar* k = find_known_nccl_var(v.name)) {
      judge_value(v, *k, out);
      continue;
    }
    bool plugin = false;
    for (const char* p : kPluginPrefixes) plugin = plugin || starts_with(v.name, p);
    if (plugin) continue;
    bool image = false;
    for (const char* n : kImageVariables) image = image || v.name == n;
    if (image) {
      out.push_back(info("nccl_env.image_variable", v.name,
                         v.name + "=" + v.value + " (from " + where(v) + ") is set by container images "
                         "or build tools, not read by NCCL"));
      continue;
    }
    // A near miss of a known name is a typo whose setting NCCL silently ignores: warn. Any other
    // NCCL_* name may be one a newer NCCL (or a fork) reads that this list does not have yet:
    // say so without failing the node.
    std::string guess = closest_known_nccl_var(v.name);
    if (!guess.empty()) {
      out.push_back(warn("nccl_env.unknown_variable", v.name,
                         v.name + " (from " + where(v) + ") is not a variable NCCL reads, and is one or two "
                         "letters from " + guess + " (did you mean " + guess + "?); NCCL ignores unknown "
                         "names silently",
                         "rename it to " + guess));
    } else {
      out.push_back(info("nccl_env.unrecognised_variable", v.name,
                         v.name + " (from " + where(v) + ") is not among the NCCL variables fabcheck knows "
                         "and resembles none of them: a newer NCCL's, a fork's, or unused"));
    }
  }

  const NcclVariable* ib_disable = find_variable(f, "NCCL_IB_DISABLE");
  if (ib_disable && rdma_ports) {
    std::string active;
    if (std::strtoll(ib_disable->value.c_str(), nullptr, 0) != 0 && has_active_ib(*rdma_ports, &active))
      out.push_back(fail("nccl_env.ib_disabled_with_active_ports", "NCCL_IB_DISABLE",
                         "NCCL_IB_DISABLE=" + ib_disable->value + " (from " + where(*ib_disable) +
                             ") while RDMA ports are active: " + active +
                             "; NCCL uses TCP sockets instead",
                         "unset NCCL_IB_DISABLE (remove it from " + where(*ib_disable) + ")"));
  }
  if (const NcclVariable* hca = find_variable(f, "NCCL_IB_HCA"); hca && rdma_ports)
    judge_ib_hca(*hca, *rdma_ports, out);

  if (f.topo_file && !f.topo_file_present)
    out.push_back(fail("nccl_env.topo_file_missing", "NCCL_TOPO_FILE",
                       "NCCL_TOPO_FILE=" + *f.topo_file + " does not exist on this node; NCCL "
                       "warns and detects the topology itself (in a container: wrongly)",
                       "mount the topology file into the container or fix the path"));
  return out;
}

}  // namespace fabkit::probes
