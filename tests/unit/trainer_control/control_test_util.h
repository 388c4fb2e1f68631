// Shared by the control tests: a raw client that sends exact bytes, and an environment pointing
// the client at a test's own control directory.
#pragma once

#include <sys/socket.h>

#include <string>

#include "common/environment.h"
#include "fabric/wire/socket_io.h"
#include "trainer/control/protocol.h"
#include "trainer/control/unix_socket.h"

namespace fabkit::trainer::control {

inline Environment env_with_dir(const std::filesystem::path& dir) {
  return Environment({{"FABTRAIN_CONTROL_DIR", dir.string()}});
}

// Sends bytes as they are (then ends the sending side when close_write), then reads the reply
// line (2 s deadline).
inline Json raw_exchange(const std::filesystem::path& socket, const std::string& bytes,
                         bool close_write = false) {
  int err = 0;
  UniqueFd fd = connect_unix(socket, &err);
  if (!fd)
    throw std::runtime_error("connect " + socket.string() + ": errno " + std::to_string(err));
  const auto deadline = wire::deadline_in_ms(2000);
  wire::write_all(fd.get(), bytes.data(), bytes.size(), deadline, "test request");
  if (close_write) ::shutdown(fd.get(), SHUT_WR);
  return Json::parse(read_line(fd.get(), 1 << 20, deadline, "test reply"));
}

}  // namespace fabkit::trainer::control
