#include "common/helper_program.h"

#include <unistd.h>

#include <cstdlib>

#include "common/trusted_path.h"

namespace fabkit {

std::string installed_helpers_from_bin() { return FABKIT_HELPERS_FROM_BIN; }

std::string trusted_helper_path(const std::string& path, std::vector<std::string>* refused) {
  if (path.empty() || ::access(path.c_str(), X_OK) != 0) return "";
  TrustOptions t;
  t.regular_file = true;
  if (auto d = find_distrust(path, t)) {
    if (refused) refused->push_back(path + ": " + d->message() + " (" + d->fix + ")");
    return "";
  }
  return path;
}

std::string find_helper_program(const HelperProgram& h, const std::string& self_dir,
                                std::vector<std::string>* refused) {
  if (!h.env_var.empty()) {
    if (const char* env = std::getenv(h.env_var.c_str()); env && *env) {
      if (std::string p = trusted_helper_path(env, refused); !p.empty()) return p;
    }
  }
  if (self_dir.empty()) return "";
  if (std::string p = trusted_helper_path(self_dir + "/" + h.name, refused); !p.empty()) return p;
  return trusted_helper_path(self_dir + "/" + installed_helpers_from_bin() + "/" + h.name, refused);
}

std::string refused_suffix(const std::vector<std::string>& refused) {
  std::string s;
  for (const auto& r : refused) s += "; refused " + r;
  return s;
}

std::string self_executable_dir() {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

}  // namespace fabkit
