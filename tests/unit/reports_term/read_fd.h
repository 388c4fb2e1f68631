// Everything readable now from a non-blocking descriptor (a pipe or a pty master the test set up).
#pragma once

#include <unistd.h>

#include <string>

namespace fabkit::reports::term {

inline std::string drain(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace fabkit::reports::term
