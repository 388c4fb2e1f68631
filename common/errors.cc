#include "common/errors.h"

#include <cstring>

namespace fabkit {

std::string SysError::to_string() const {
  std::string s = call;
  if (!object.empty()) s += "(" + object + ")";
  s += ": ";
  s += std::strerror(err);
  s += " (errno " + std::to_string(err) + ")";
  return s;
}

void enforce_failed(const char* expr, const char* file, int line, const std::string& msg) {
  throw InternalError(std::string("internal error: ") + expr + " failed at " + file + ":" +
                      std::to_string(line) + ": " + msg);
}

}  // namespace fabkit
