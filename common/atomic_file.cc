#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <vector>

#include "common/errors.h"
#include "common/unique_fd.h"

namespace fabkit {
namespace {

[[noreturn]] void fail(const char* call, int err, const std::string& object) {
  throw SysErrorException(SysError{call, err, object});
}

// Removes the temp file unless disarmed: every early exit (error or exception from the body)
// leaves the directory as it was.
struct TempFile {
  std::string path;
  bool armed = true;
  ~TempFile() {
    if (armed) ::unlink(path.c_str());
  }
};

}  // namespace

void fsync_directory(const std::filesystem::path& dir) {
  UniqueFd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d.valid()) fail("open", errno, dir.string());
  // Some filesystems refuse fsync on a directory (EINVAL): the rename is then as durable as it
  // can be made there.
  if (::fsync(d.get()) != 0 && errno != EINVAL) fail("fsync", errno, dir.string());
}

void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& body,
                           mode_t mode) {
  std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  UniqueFd fd(::mkostemp(name.data(), O_CLOEXEC));
  if (!fd.valid()) fail("mkstemp", errno, tmpl);
  TempFile tmp{name.data()};
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd.get(), mode & ~mask) != 0) fail("fchmod", errno, tmp.path);
  {
    std::ofstream out(tmp.path, std::ios::binary | std::ios::trunc);
    if (!out) fail("open", errno, tmp.path);
    body(out);
    out.flush();
    if (!out) fail("write", errno ? errno : EIO, tmp.path);
  }
  if (::fsync(fd.get()) != 0) fail("fsync", errno, tmp.path);
  if (::close(fd.release()) != 0) fail("close", errno, tmp.path);
  if (::rename(tmp.path.c_str(), path.c_str()) != 0) fail("rename", errno, tmp.path + " -> " + path.string());
  tmp.armed = false;
  fsync_directory(dir);
}

void write_file_atomically(const std::filesystem::path& path, const std::string& content, mode_t mode) {
  write_file_atomically(path, [&](std::ostream& out) { out.write(content.data(), static_cast<std::streamsize>(content.size())); },
                        mode);
}

}  // namespace fabkit
