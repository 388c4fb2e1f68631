#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ext/stdio_filebuf.h>
#include <ostream>
#include <vector>

#include "common/errors.h"
#include "common/trusted_path.h"
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

void require_trusted_output_dir(const std::filesystem::path& dir) {
  // The rule guards root: another user who may write where an unprivileged user writes gains
  // nothing they did not have, and refusing would break group-writable project directories.
  if (::geteuid() != 0) return;
  // A directory that does not exist is mkstemp's to report, as every other failure to write is.
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 && errno == ENOENT) return;
  TrustOptions t;
  t.sticky_leaf_ok = true;  // /tmp: what root creates there with O_EXCL stays root's
  if (auto d = find_distrust(dir, t))
    throw UsageError("cannot write into " + dir.string() + ": " + d->message() +
                     ", and could swap what is written there or where it goes; " + d->fix);
}

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
  require_trusted_output_dir(dir);
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
    // Written through the descriptor mkostemp returned, never by reopening the name: in a
    // directory another user may write, that name can be swapped for a link to any file between
    // the two opens, and root would then write through it. libstdc++'s stdio_filebuf streams to a
    // descriptor; it closes the one it is given, so it gets a duplicate and fd stays ours to fsync.
    UniqueFd dup(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    if (!dup.valid()) fail("fcntl(F_DUPFD)", errno, tmp.path);
    __gnu_cxx::stdio_filebuf<char> buf(dup.release(), std::ios::out | std::ios::binary);
    std::ostream out(&buf);
    errno = 0;
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
