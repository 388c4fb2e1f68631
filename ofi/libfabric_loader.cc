#include <dlfcn.h>
#include <cstdlib>

#include <filesystem>
#include <system_error>

#include "common/trusted_path.h"
#include "ofi/libfabric_api.h"

namespace fabkit::ofi {
namespace {

constexpr char kSoname[] = "libfabric.so.1";

// The directory Debian and Ubuntu install libfabric1 into.
#if defined(__x86_64__)
constexpr char kMultiarchDir[] = "/usr/lib/x86_64-linux-gnu";
#elif defined(__aarch64__)
constexpr char kMultiarchDir[] = "/usr/lib/aarch64-linux-gnu";
#else
constexpr char kMultiarchDir[] = "/usr/lib";
#endif

bool bind(void* h, const char* name, void** out, std::string* error) {
  ::dlerror();
  *out = ::dlsym(h, name);
  if (*out == nullptr) {
    const char* why = ::dlerror();
    *error = std::string("dlsym ") + name + ": " + (why ? why : "symbol is null");
    return false;
  }
  return true;
}

}  // namespace

bool never_searched(const std::string& dir) {
  if (dir.empty() || dir[0] != '/') return true;  // relative: the current directory's
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  for (const char* tmp : {"/tmp", "/var/tmp", "/dev/shm", "/run/user"}) {
    std::filesystem::path t(tmp);
    auto rel = p.lexically_relative(t);
    if (!rel.empty() && *rel.begin() != "..") return true;
  }
  return false;
}

std::vector<std::string> libfabric_search_dirs(const Environment& env) {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (never_searched(d)) return;
    std::string n = std::filesystem::path(d).lexically_normal().string();
    if (n.size() > 1 && n.back() == '/') n.pop_back();
    for (const auto& have : dirs)
      if (have == n) return;
    dirs.push_back(n);
  };
  if (auto ld = env.get("LD_LIBRARY_PATH")) {
    size_t start = 0;
    while (start <= ld->size()) {
      size_t end = ld->find(':', start);
      if (end == std::string::npos) end = ld->size();
      add(ld->substr(start, end - start));
      start = end + 1;
    }
  }
  // The EFA installer's libfabric (the one built with the efa provider and FI_HMEM), then the
  // distribution's.
  for (const char* d : {"/opt/amazon/efa/lib64", "/opt/amazon/efa/lib", kMultiarchDir, "/usr/lib64",
                        "/usr/lib", "/usr/local/lib"})
    add(d);
  return dirs;
}

LibfabricEntry load_libfabric(const Environment& env) {
  LibfabricEntry e;
  std::vector<std::string> refused;
  for (const auto& dir : libfabric_search_dirs(env)) {
    std::filesystem::path file = std::filesystem::path(dir) / kSoname;
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) continue;
    TrustOptions regular;
    regular.regular_file = true;
    if (auto distrust = find_distrust(file, regular)) {
      refused.push_back(file.string() + " (" + distrust->message() + "; " + distrust->fix + ")");
      continue;
    }
    e.path = file.string();
    break;
  }
  if (e.path.empty()) {
    e.error =
        "no libfabric.so.1 in a trusted library directory (searched LD_LIBRARY_PATH, "
        "/opt/amazon/efa/lib64, /opt/amazon/efa/lib and the system library directories)";
    if (!refused.empty()) {
      e.error += "; refused:";
      for (const auto& r : refused) e.error += " " + r;
    }
    return e;
  }
  // Debian's libfabric links libpsm_infinipath, whose libinfinipath constructor installs
  // SIGSEGV/SIGABRT handlers that write "<program>.80s-<pid>,<host>.btr" into the current
  // directory and exit(1): root writing files where it happens to stand, and a crash no longer
  // reported as one. IPATH_NO_BACKTRACE (read by that constructor, so set before the load) keeps
  // the handlers out. Only the children that load libfabric (ofi-discover, the RDM test's runner)
  // reach this.
  ::setenv("IPATH_NO_BACKTRACE", "1", 1);
  // RTLD_LOCAL: its symbols must not satisfy anything loaded later. Never dlclose'd: providers
  // start progress threads (rxm, efa) that would run on in unmapped code.
  void* h = ::dlopen(e.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = ::dlerror();
    e.error = "dlopen " + e.path + ": " + (why ? why : "failed");
    return e;
  }
  e.handle = std::shared_ptr<void>(h, [](void*) {});
  bool ok =
      bind(h, "fi_getinfo", &e.getinfo, &e.error) &&
      bind(h, "fi_freeinfo", &e.freeinfo, &e.error) &&
      bind(h, "fi_dupinfo", &e.dupinfo, &e.error) && bind(h, "fi_fabric", &e.fabric, &e.error) &&
      bind(h, "fi_version", &e.version, &e.error) &&
      bind(h, "fi_strerror", &e.strerror, &e.error) && bind(h, "fi_tostr", &e.tostr, &e.error);
  if (!ok) {
    e.error = e.path + ": " + e.error;
    e.handle.reset();
  }
  return e;
}

}  // namespace fabkit::ofi
