#include <algorithm>
#include <set>

#include "probes/libfabric/libfabric_facts.h"

namespace fabkit::probes {
namespace {

// The EFA installer puts the libfabric built for EFA (efa provider, CUDA FI_HMEM) in
// /opt/amazon/efa (AWS docs, "Get started with EFA and NCCL", step "Install the EFA software").
const char* kEfaInstallerFix =
    "install the EFA software: curl -O "
    "https://efa-installer.amazonaws.com/aws-efa-installer-latest.tar.gz && tar -xf "
    "aws-efa-installer-latest.tar.gz && cd aws-efa-installer && sudo ./efa_installer.sh -y; its "
    "libfabric is /opt/amazon/efa/lib/libfabric.so.1 (give jobs "
    "LD_LIBRARY_PATH=/opt/amazon/efa/lib)";

std::string core_name(const std::string& provider) {
  return provider.substr(0, provider.find(';'));
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

std::vector<std::string> offered_names(const ofi::OfiDiscovery& d) {
  std::vector<std::string> names;
  for (const auto& p : d.providers)
    if (std::find(names.begin(), names.end(), p.name) == names.end()) names.push_back(p.name);
  return names;
}

// FI_PROVIDER names core providers: "tcp" for "tcp;ofi_rxm".
std::vector<std::string> core_names(const std::vector<std::string>& offered) {
  std::vector<std::string> out;
  for (const auto& o : offered)
    if (std::find(out.begin(), out.end(), core_name(o)) == out.end()) out.push_back(core_name(o));
  return out;
}

bool older_than(const ofi::OfiLibrary& l, int major, int minor) {
  auto v = ofi::parse_major_minor(l.api_version.empty() ? l.version : l.api_version);
  return v && (v->first < major || (v->first == major && v->second < minor));
}

std::string describe(const ofi::OfiLibrary& l) {
  return "libfabric " + l.version + " (" + l.path + ")";
}

}  // namespace

std::vector<std::string> providers_selected(const std::string& fi_provider,
                                            const std::vector<std::string>& offered) {
  std::string list = fi_provider;
  bool exclude = !list.empty() && list[0] == '^';
  if (exclude) list.erase(0, 1);
  std::set<std::string> named;
  for (const auto& n : split_commas(list)) named.insert(n);
  std::vector<std::string> out;
  for (const auto& o : offered)
    if ((named.count(core_name(o)) != 0) != exclude) out.push_back(o);
  return out;
}

std::vector<Finding> judge_libfabric(const LibfabricFacts& f, const LibfabricContext& c) {
  std::vector<Finding> out;
  if (!f.gathered) return out;
  const auto& d = f.discovery;
  const bool efa = c.efa_devices > 0;
  const std::string devices =
      std::to_string(c.efa_devices) + " EFA device" + (c.efa_devices == 1 ? "" : "s");
  if (!d.library.loaded) {
    const bool unbuilt = d.library.error.rfind("not built with libfabric", 0) == 0;
    if (unbuilt && efa) {
      out.push_back(warn("libfabric.not_built", "libfabric",
                         "this node has " + devices + " but this fabcheck was " + d.library.error +
                             ", so it cannot check the EFA provider",
                         "build fabcheck where libfabric-dev is installed"));
    } else if (!unbuilt && efa) {
      out.push_back(fail("libfabric.not_loadable", "libfabric",
                         "this node has " + devices +
                             " but no libfabric could be loaded: " + d.library.error +
                             "; aws-ofi-nccl cannot start and NCCL falls back to TCP sockets",
                         kEfaInstallerFix));
    } else if (!unbuilt && c.fi_provider) {
      out.push_back(warn("libfabric.not_loadable", "libfabric",
                         "FI_PROVIDER=" + *c.fi_provider +
                             " asks libfabric for a provider, but no libfabric could be loaded: " +
                             d.library.error,
                         "install libfabric (the EFA installer's on EFA instances), or unset "
                         "FI_PROVIDER where no OFI job runs"));
    }
    return out;
  }
  if (d.getinfo_error) {
    out.push_back(
        Finding{efa ? Severity::kFail : Severity::kWarn, "libfabric.getinfo_failed", "libfabric",
                describe(d.library) + " refused to list its RDM providers: " + *d.getinfo_error,
                "run `fi_info -t FI_EP_RDM` to see the same error; FI_LOG_LEVEL=warn "
                "shows why"});
    return out;
  }

  std::vector<std::string> offered = offered_names(d);
  const ofi::OfiProvider* efa_provider = nullptr;
  bool efa_hmem = false;
  for (const auto& p : d.providers)
    if (core_name(p.name) == "efa") {
      if (!efa_provider) efa_provider = &p;
      efa_hmem = efa_hmem || p.has_cap(ofi::kCapHmem);
    }

  if (efa && !efa_provider) {
    out.push_back(fail(
        "libfabric.no_efa_provider", "libfabric",
        "this node has " + devices + " but " + describe(d.library) +
            " offers no efa provider (its RDM providers: " + join(offered) +
            "): either it was built without the EFA provider, or the provider found no usable "
            "device (rdma-core's libefa missing, /dev/infiniband/uverbs* not visible in a "
            "container); aws-ofi-nccl then picks another provider or NCCL falls back to sockets",
        std::string(kEfaInstallerFix) + "; in a container pass the EFA devices "
                                        "(--device=/dev/infiniband/uverbs0 ...)"));
  }
  if (efa_provider && older_than(d.library, kPluginEfaMinMajor, kPluginEfaMinMinor)) {
    out.push_back(fail(
        "libfabric.too_old_for_plugin", "libfabric",
        describe(d.library) + " (API " + d.library.api_version +
            ") is older than 1.22, which aws-ofi-nccl requires for the efa "
            "provider (\"EFA provider requires at least libfabric version "
            "1.22.0\"): the plugin refuses EFA and NCCL falls back to sockets",
        std::string(kEfaInstallerFix) + " (the current installer ships libfabric 1.22 or newer)"));
  } else if (older_than(d.library, kPluginMinMajor, kPluginMinMinor)) {
    out.push_back(warn("libfabric.too_old_for_plugin", "libfabric",
                       describe(d.library) + " is older than 1.11, the oldest aws-ofi-nccl "
                                             "builds against",
                       "install libfabric 1.11 or newer (on EFA instances, the EFA installer's)"));
  }
  if (efa_provider && !efa_hmem && c.use_device_rdma && *c.use_device_rdma == "1") {
    out.push_back(warn("libfabric.efa_no_hmem", "efa",
                       "FI_EFA_USE_DEVICE_RDMA=1 asks for GPUDirect RDMA, but no efa provider of " +
                           describe(d.library) +
                           " offers FI_HMEM (transfers to and from GPU memory): aws-ofi-nccl "
                           "turns GPUDirect RDMA off and stages every transfer through host "
                           "memory (this libfabric was built without CUDA support)",
                       std::string(kEfaInstallerFix) +
                           "; on an instance without GPUDirect RDMA (not p4d/p5), unset "
                           "FI_EFA_USE_DEVICE_RDMA"));
  }
  if (c.fi_provider && !c.fi_provider->empty() &&
      providers_selected(*c.fi_provider, offered).empty()) {
    out.push_back(fail("libfabric.provider_not_offered", "FI_PROVIDER",
                       "FI_PROVIDER=" + *c.fi_provider + " selects none of the RDM providers " +
                           describe(d.library) + " offers (" + join(offered) +
                           "): every OFI job on this node finds no provider",
                       offered.empty() ? std::string(kEfaInstallerFix)
                                       : "set FI_PROVIDER to one of: " + join(core_names(offered)) +
                                             " (or unset it)"));
  }
  return out;
}

}  // namespace fabkit::probes
