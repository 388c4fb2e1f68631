// Judging the plugin NCCL would load. Every failure here has the same symptom in a job: NCCL logs
// one INFO line ("NET/Plugin: Could not find: libnccl-net.so", "External network plugin ... is
// unsupported") and carries on over its own IB or socket transport, so a job on EFA runs over TCP
// sockets at a fraction of the bandwidth without an error (docs/findings/nccl_net.md).
#include <strings.h>

#include <algorithm>

#include "probes/nccl_net/nccl_net_facts.h"

namespace fabkit::probes {
namespace {

const char* kOfiDir = "/opt/amazon/ofi-nccl/lib";  // where the EFA installer puts aws-ofi-nccl

std::string list_versions(const std::vector<int>& vs) {
  std::string out;
  std::vector<int> sorted = vs;
  std::sort(sorted.rbegin(), sorted.rend());
  for (int v : sorted) out += (out.empty() ? "v" : ", v") + std::to_string(v);
  return out.empty() ? "none" : out;
}

std::string join(const std::vector<std::string>& xs, const std::string& sep) {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : sep) + x;
  return out;
}

std::string searched(const NcclNetFacts& f) {
  std::vector<std::string> dirs;
  for (const auto& d : f.search_dirs) dirs.push_back(d.dir);
  return join(dirs, ":");
}

// "2.28.9+cuda13.0" -> 28; nullopt when the text is no NCCL 2.x version.
std::optional<int> nccl_minor(const std::string& version) {
  auto v = parse_dotted_version(version.substr(0, version.find('+')));
  if (!v || (*v)[0] != 2) return std::nullopt;
  return (*v)[1];
}

bool version_at_most(const std::string& version, const std::vector<int>& limit) {
  // "1.5.0aws", "1.7.4-aws", "1.14.2": the numeric part decides.
  auto v = parse_dotted_version(version.substr(0, version.find_first_not_of("0123456789.")));
  if (!v) return false;
  return std::lexicographical_compare(v->begin(), v->end(), limit.begin(), limit.end()) ||
         *v == limit;
}

std::string describe(const LibraryFile& p) {
  std::string what = p.kind == "unknown" ? "a net plugin" : p.kind;
  if (!p.version.empty()) what += " " + p.version;
  return what + " (" + p.path + ")";
}

void judge_plugin_file(const NcclNetFacts& f, const LibraryFile& p, std::vector<Finding>& out) {
  if (p.elf.error) {
    out.push_back(fail("nccl_net.plugin_unreadable", p.path,
                       "NCCL would dlopen " + p.path +
                           " as its net plugin, but it is not a "
                           "readable shared object: " +
                           *p.elf.error +
                           "; NCCL would then fall back "
                           "to its own IB or socket transport",
                       "reinstall the plugin (aws-ofi-nccl: the EFA installer, into " +
                           std::string(kOfiDir) + ") or remove " + p.path));
    return;
  }
  if (!p.elf.machine.empty() && p.elf.machine != host_elf_machine())
    out.push_back(fail("nccl_net.plugin_wrong_machine", p.path,
                       p.path + " is built for " + p.elf.machine + ", this node is " +
                           host_elf_machine() + ": dlopen fails and NCCL falls back silently",
                       "install the " + host_elf_machine() + " build of the plugin"));
  if (p.elf.net_api_versions.empty()) {
    out.push_back(fail(
        "nccl_net.plugin_no_api", p.path,
        p.path + " exports no ncclNetPlugin_vN symbol: NCCL logs \"External network "
                 "plugin ... is unsupported\" and falls back to its own transports",
        "point NCCL_NET_PLUGIN or LD_LIBRARY_PATH at the real plugin; " + p.path + " is not one"));
    return;
  }
  if (!f.nccl || f.nccl->version.empty()) return;
  auto minor = nccl_minor(f.nccl->version);
  if (!minor) return;
  std::vector<int> loads = nccl_net_api_versions(*minor);
  if (loads.empty()) {
    if (*minor > newest_known_nccl_minor())
      out.push_back(info("nccl_net.nccl_newer_than_table", f.nccl->path,
                         "NCCL " + f.nccl->version +
                             " is newer than the plugin API table (NCCL "
                             "2." +
                             std::to_string(newest_known_nccl_minor()) + "): the plugin's " +
                             list_versions(p.elf.net_api_versions) + " was not compared"));
    return;
  }
  for (int v : loads)
    if (std::count(p.elf.net_api_versions.begin(), p.elf.net_api_versions.end(), v)) return;
  std::vector<std::string> since;
  for (int v : p.elf.net_api_versions)
    if (auto r = nccl_release_introducing(v); !r.empty())
      since.push_back("v" + std::to_string(v) + " since NCCL " + r);
  out.push_back(
      fail("nccl_net.plugin_api_mismatch", p.path,
           describe(p) + " offers plugin API " + list_versions(p.elf.net_api_versions) +
               (since.empty() ? "" : " (" + join(since, ", ") + ")") + "; NCCL " + f.nccl->version +
               " (" + f.nccl->path + ") loads only " + list_versions(loads) +
               ": it was built against another NCCL, and NCCL falls back to its own transports",
           "install the plugin release built for NCCL 2." + std::to_string(*minor) +
               " (aws-ofi-nccl: a current release from the EFA installer), or an NCCL that loads " +
               list_versions(p.elf.net_api_versions)));
}

}  // namespace

std::vector<Finding> judge_nccl_net(const NcclNetFacts& f, const std::vector<std::string>& efa) {
  std::vector<Finding> out;
  bool on_efa = !efa.empty();
  std::string efa_list = join(efa, ", ");
  for (const auto& issue : f.search_issues)
    out.push_back(warn("nccl_net.search_path_relative", "LD_LIBRARY_PATH",
                       issue + ": a library (an NCCL net plugin among them) would be loaded from "
                               "wherever the job starts",
                       "use absolute directories only in LD_LIBRARY_PATH"));

  if (f.disabled) {
    if (on_efa)
      out.push_back(fail("nccl_net.plugin_disabled", "NCCL_NET_PLUGIN",
                         "NCCL_NET_PLUGIN=" + *f.requested + " (" + f.requested_source +
                             ") loads no net plugin, yet this node has EFA devices (" + efa_list +
                             "): NCCL runs over TCP sockets",
                         "unset NCCL_NET_PLUGIN (or set it to ofi) so NCCL loads aws-ofi-nccl"));
    return out;
  }
  if (!f.plugin) {
    std::vector<std::string> names;
    for (const auto& c : f.candidates) names.push_back(c.name);
    if (f.requested)
      out.push_back(fail("nccl_net.plugin_not_found", "NCCL_NET_PLUGIN",
                         "NCCL_NET_PLUGIN=" + *f.requested + " (" + f.requested_source +
                             "), but the loader finds none of " + join(names, ", ") + " in " +
                             searched(f) +
                             ": NCCL logs \"NET/Plugin: Could not find\" and uses "
                             "its own IB or socket transport",
                         "export LD_LIBRARY_PATH=<the plugin's lib dir>:$LD_LIBRARY_PATH, or set "
                         "NCCL_NET_PLUGIN to the plugin file's full path"));
    else if (on_efa)
      out.push_back(fail("nccl_net.no_ofi_plugin", "libnccl-net.so",
                         "this node has EFA devices (" + efa_list +
                             ") but the loader finds no "
                             "libnccl-net.so in " +
                             searched(f) +
                             ": NCCL falls back to TCP sockets "
                             "silently",
                         "install aws-ofi-nccl (the EFA installer puts it in " +
                             std::string(kOfiDir) + ") and export LD_LIBRARY_PATH=" + kOfiDir +
                             ":$LD_LIBRARY_PATH"));
  } else {
    const LibraryFile& p = *f.plugin;
    if (p.distrust)
      out.push_back(
          fail("nccl_net.plugin_untrusted", p.path,
               "NCCL would load " + p.path + " into every job run as root, but " + *p.distrust,
               p.distrust_fix));
    judge_plugin_file(f, p, out);
    if (on_efa && !p.elf.error && p.kind != "aws-ofi-nccl" && p.kind != "unknown")
      out.push_back(warn("nccl_net.plugin_not_ofi", p.path,
                         "this node has EFA devices (" + efa_list + ") but NCCL would load " +
                             describe(p) +
                             ", not aws-ofi-nccl: EFA is reached only through "
                             "libfabric",
                         "export LD_LIBRARY_PATH=" + std::string(kOfiDir) +
                             ":$LD_LIBRARY_PATH and unset NCCL_NET_PLUGIN"));
    // aws-ofi-nccl <= 1.5.0 on EFA needs NCCL_PROTO=simple (aws/aws-ofi-nccl
    // doc/efa-env-var.md@2daf7d3: "Use for aws-ofi-nccl<=1.5.0 AND EFA-enabled GPU instances";
    // from 1.6.0 the plugin needs no protocol setting).
    if (on_efa && p.kind == "aws-ofi-nccl" && version_at_most(p.version, {1, 5, 0}) &&
        !(f.nccl_proto && strcasecmp(f.nccl_proto->c_str(), "simple") == 0))
      out.push_back(warn("nccl_net.ofi_proto_simple", p.path,
                         "aws-ofi-nccl " + p.version +
                             " on EFA needs NCCL_PROTO=simple (its "
                             "documentation asks for it up to 1.5.0); NCCL_PROTO is " +
                             (f.nccl_proto ? "'" + *f.nccl_proto + "'" : std::string("unset")),
                         "export NCCL_PROTO=simple, or upgrade aws-ofi-nccl to 1.6.0 or later"));
    if (out.empty() || std::none_of(out.begin(), out.end(),
                                    [](const Finding& x) { return x.severity == Severity::kFail; }))
      out.push_back(info("nccl_net.plugin", p.path,
                         "NCCL would load " + describe(p) + ", plugin API " +
                             list_versions(p.elf.net_api_versions) +
                             (f.nccl && !f.nccl->version.empty()
                                  ? "; NCCL " + f.nccl->version + " at " + f.nccl->path
                                  : std::string("; no libnccl.so.2 on the loader's path to "
                                                "compare with"))));
  }
  judge_gcp(f, out);
  if (f.nccl && f.nccl->distrust)
    out.push_back(
        fail("nccl_net.plugin_untrusted", f.nccl->path,
             "the loader's libnccl.so.2 is " + f.nccl->path + ", but " + *f.nccl->distrust,
             f.nccl->distrust_fix));
  return out;
}

}  // namespace fabkit::probes
