#include "ofi/libfabric_api.h"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <cstdlib>
#include <optional>

namespace fabkit::ofi {
namespace {

using GetinfoFn = int (*)(uint32_t, const char*, const char*, uint64_t, const fi_info*, fi_info**);
using FreeinfoFn = void (*)(fi_info*);
using DupinfoFn = fi_info* (*)(const fi_info*);
using VersionFn = uint32_t (*)();
using StrerrorFn = const char* (*)(int);
using TostrFn = char* (*)(const void*, enum fi_type);

std::vector<std::string> caps_of(uint64_t caps) {
  std::vector<std::string> out;
  if (caps & FI_MSG) out.push_back(kCapMsg);
  if (caps & FI_RMA) out.push_back(kCapRma);
  if (caps & FI_TAGGED) out.push_back(kCapTagged);
  if (caps & FI_HMEM) out.push_back(kCapHmem);
  return out;
}

std::vector<std::string> mr_mode_of(int mode) {
  static const std::pair<int, const char*> kBits[] = {
      {FI_MR_LOCAL, "FI_MR_LOCAL"},         {FI_MR_RAW, "FI_MR_RAW"},
      {FI_MR_VIRT_ADDR, "FI_MR_VIRT_ADDR"}, {FI_MR_ALLOCATED, "FI_MR_ALLOCATED"},
      {FI_MR_PROV_KEY, "FI_MR_PROV_KEY"},   {FI_MR_MMU_NOTIFY, "FI_MR_MMU_NOTIFY"},
      {FI_MR_RMA_EVENT, "FI_MR_RMA_EVENT"}, {FI_MR_ENDPOINT, "FI_MR_ENDPOINT"},
      {FI_MR_HMEM, "FI_MR_HMEM"},           {FI_MR_COLLECTIVE, "FI_MR_COLLECTIVE"}};
  std::vector<std::string> out;
  // FI_MR_BASIC / FI_MR_SCALABLE are the pre-1.5 enum values 1 and 2, not bits.
  if (mode == FI_MR_BASIC) return {"FI_MR_BASIC"};
  if (mode == FI_MR_SCALABLE) return {"FI_MR_SCALABLE"};
  for (const auto& [bit, name] : kBits)
    if (mode & bit) out.push_back(name);
  return out;
}

const char* ep_type_name(fi_ep_type t) {
  switch (t) {
    case FI_EP_MSG:
      return "FI_EP_MSG";
    case FI_EP_DGRAM:
      return "FI_EP_DGRAM";
    case FI_EP_RDM:
      return "FI_EP_RDM";
    default:
      return "FI_EP_UNSPEC";
  }
}

// libfabric reads FI_PROVIDER once, when it first initializes, and from then on offers only the
// providers it names. The probe wants every provider this libfabric can offer (FI_PROVIDER is
// judged against them), so it is out of the environment for that first call and put back after.
class ProviderFilterAside {
 public:
  ProviderFilterAside() {
    if (const char* v = std::getenv("FI_PROVIDER")) {
      saved_ = v;
      ::unsetenv("FI_PROVIDER");
    }
  }
  ~ProviderFilterAside() {
    if (saved_) ::setenv("FI_PROVIDER", saved_->c_str(), 1);
  }

 private:
  std::optional<std::string> saved_;
};

class LibfabricApi final : public OfiApi {
 public:
  explicit LibfabricApi(Environment env) : env_(std::move(env)) {}

  OfiDiscovery discover() override {
    OfiDiscovery d;
    d.source = "libfabric";
    ProviderFilterAside aside;
    LibfabricEntry e = load_libfabric(env_);
    if (!e.handle) {
      d.library.error = e.error;
      return d;
    }
    auto version = reinterpret_cast<VersionFn>(e.version);
    auto tostr = reinterpret_cast<TostrFn>(e.tostr);
    auto getinfo = reinterpret_cast<GetinfoFn>(e.getinfo);
    auto freeinfo = reinterpret_cast<FreeinfoFn>(e.freeinfo);
    auto dupinfo = reinterpret_cast<DupinfoFn>(e.dupinfo);
    auto strerror = reinterpret_cast<StrerrorFn>(e.strerror);
    d.library.loaded = true;
    d.library.path = e.path;
    const uint32_t runtime = version();
    d.library.api_version = version_text(runtime);
    // fi_tostr(FI_TYPE_VERSION) ignores its data and names the library's own release.
    const char* release = tostr("", FI_TYPE_VERSION);
    d.library.version = release && *release ? release : d.library.api_version;

    // Ask for the older of the library's API and this build's headers: a library older than the
    // request refuses it (-FI_ENOSYS), and fields past our headers' fi_info are never read.
    const uint32_t built = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    const uint32_t request = FI_VERSION_LT(runtime, built) ? runtime : built;
    fi_info* hints = dupinfo(nullptr);
    if (!hints) {
      d.getinfo_error = "fi_allocinfo failed (out of memory)";
      return d;
    }
    hints->ep_attr->type = FI_EP_RDM;
    fi_info* info = nullptr;
    int rc = getinfo(request, nullptr, nullptr, 0, hints, &info);
    freeinfo(hints);
    if (rc == -FI_ENODATA) return d;  // no RDM provider at all: an empty list
    if (rc != 0) {
      d.getinfo_error =
          "fi_getinfo: " + std::string(strerror(-rc)) + " (" + std::to_string(rc) + ")";
      return d;
    }
    for (fi_info* i = info; i; i = i->next) {
      OfiProvider p;
      if (i->fabric_attr) {
        p.name = i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "";
        p.fabric = i->fabric_attr->name ? i->fabric_attr->name : "";
        p.version = std::to_string(FI_MAJOR(i->fabric_attr->prov_version)) + "." +
                    std::to_string(FI_MINOR(i->fabric_attr->prov_version));
      }
      if (i->domain_attr) {
        p.domain = i->domain_attr->name ? i->domain_attr->name : "";
        p.mr_mode = mr_mode_of(i->domain_attr->mr_mode);
      }
      p.endpoint_type = ep_type_name(i->ep_attr ? i->ep_attr->type : FI_EP_UNSPEC);
      p.caps = caps_of(i->caps);
      d.providers.push_back(std::move(p));
    }
    freeinfo(info);
    return d;
  }

 private:
  Environment env_;
};

}  // namespace

std::unique_ptr<OfiApi> make_libfabric_api(const Environment& env) {
  return std::make_unique<LibfabricApi>(env);
}

}  // namespace fabkit::ofi
