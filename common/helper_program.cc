#include "common/helper_program.h"

#include <unistd.h>

#include <cstdlib>

namespace fabkit {
namespace {

bool executable(const std::string& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0; }

}  // namespace

std::string installed_helpers_from_bin() { return FABKIT_HELPERS_FROM_BIN; }

std::string find_helper_program(const HelperProgram& h, const std::string& self_dir) {
  if (!h.env_var.empty()) {
    if (const char* env = std::getenv(h.env_var.c_str()); env && executable(env)) return env;
  }
  if (!self_dir.empty()) {
    if (std::string beside = self_dir + "/" + h.name; executable(beside)) return beside;
    const std::string installed = self_dir + "/" + installed_helpers_from_bin() + "/" + h.name;
    if (executable(installed)) return installed;
  }
  return executable(h.build_path) ? h.build_path : "";
}

std::string self_executable_dir() {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

}  // namespace fabkit
