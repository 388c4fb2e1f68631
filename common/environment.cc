#include "common/environment.h"

#include <unistd.h>

extern char** environ;

namespace fabkit {

Environment Environment::from_process() {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    vars.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return Environment(std::move(vars));
}

std::optional<std::string> Environment::get(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

}  // namespace fabkit
