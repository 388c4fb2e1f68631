#include "profile/atomic_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/errors.h"

namespace fabkit::profile {
namespace {

[[noreturn]] void failed(const std::string& call, int err, const std::filesystem::path& object,
                         const std::filesystem::path& target) {
  throw UsageError("cannot write " + target.string() + ": " +
                   SysError{call, err, object.string()}.to_string() +
                   "; choose a writable directory with --out");
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = mkstemp(name.data());
  if (fd < 0) failed("mkstemp", errno, tmpl, path);
  std::string tmp(name.data());
  auto give_up = [&](const char* call) {
    int err = errno;
    close(fd);
    unlink(tmp.c_str());
    failed(call, err, tmp, path);
  };
  // mkstemp creates 0600; a profile or env file is meant to be read by the job's user and
  // launchers on other nodes, so use the usual 0644 (minus the umask).
  mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, 0644 & ~mask) != 0) give_up("fchmod");
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) give_up("write");
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) give_up("fsync");
  if (close(fd) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    failed("close", err, tmp, path);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    failed("rename", err, path, path);
  }
}

}  // namespace fabkit::profile
