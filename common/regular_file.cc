#include "common/regular_file.h"

#include <fcntl.h>
#include <linux/openat2.h>  // struct open_how, RESOLVE_* (the kernel's uapi header)
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/errors.h"
#include "common/file_reader.h"

namespace fabkit {
namespace {

// O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, forever. It changes nothing
// for the regular files that are all these functions return.
constexpr int kReadFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a regular file";
}

UniqueFd checked_type(UniqueFd fd, bool directory, const std::string& shown) {
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw UsageError(shown + ": cannot stat (" + std::strerror(errno) + ")");
  if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
    throw UsageError(shown + ": is " + kind_of(st.st_mode) + ", not " +
                     (directory ? "a directory" : "a regular file"));
  return fd;
}

std::string open_failure(const std::string& shown, int err) {
  if (err == EXDEV)
    return shown +
           ": leads outside its directory (a symlink pointing out of it); only files "
           "inside it are read";
  return shown + ": cannot open (" + std::strerror(err) + ")";
}

// ENOSYS: a kernel before 5.6; EPERM: a seccomp filter (older container runtimes) that does not
// know the syscall. Either way the component walk gives the same guarantee, minus symlinks.
bool openat2_missing(int err) { return err == ENOSYS || err == EPERM; }

UniqueFd open_beneath(int dir_fd, const std::string& relative, bool directory,
                      const std::string& shown) {
  if (auto why = why_not_beneath(relative)) throw UsageError(shown + ": the path " + *why);
  struct open_how how {};
  how.flags = static_cast<uint64_t>(kReadFlags | (directory ? O_DIRECTORY : 0));
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  const long fd = ::syscall(SYS_openat2, dir_fd, relative.c_str(), &how, sizeof how);
  if (fd >= 0) return checked_type(UniqueFd(static_cast<int>(fd)), directory, shown);
  if (!openat2_missing(errno)) throw UsageError(open_failure(shown, errno));
  return detail::open_beneath_by_components(dir_fd, relative, directory, shown);
}

}  // namespace

std::optional<std::string> why_not_beneath(const std::string& relative) {
  if (relative.empty()) return "is empty";
  if (relative.find('\0') != std::string::npos) return "holds a NUL byte";
  if (relative.front() == '/') return "is an absolute path";
  for (const std::string& c : split(relative, '/'))
    if (c == "..") return "has a '..' component";
  return std::nullopt;
}

UniqueFd open_regular_file(const std::filesystem::path& path, const std::string& shown) {
  UniqueFd fd(::open(path.c_str(), kReadFlags));
  if (!fd) throw UsageError(open_failure(shown, errno));
  return checked_type(std::move(fd), false, shown);
}

UniqueFd open_directory(const std::filesystem::path& path, const std::string& shown) {
  UniqueFd fd(::open(path.c_str(), kReadFlags | O_DIRECTORY));
  if (!fd) throw UsageError(open_failure(shown, errno));
  return checked_type(std::move(fd), true, shown);
}

UniqueFd open_regular_beneath(int dir_fd, const std::string& relative, const std::string& shown) {
  return open_beneath(dir_fd, relative, false, shown);
}

UniqueFd open_directory_beneath(int dir_fd, const std::string& relative, const std::string& shown) {
  return open_beneath(dir_fd, relative, true, shown);
}

namespace detail {

UniqueFd open_beneath_by_components(int dir_fd, const std::string& relative, bool directory,
                                    const std::string& shown) {
  if (auto why = why_not_beneath(relative)) throw UsageError(shown + ": the path " + *why);
  std::vector<std::string> parts;
  for (const std::string& c : split(relative, '/'))
    if (!c.empty() && c != ".") parts.push_back(c);
  if (parts.empty()) parts.push_back(".");
  UniqueFd here;
  int at = dir_fd;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    const int flags = last ? kReadFlags | O_NOFOLLOW | (directory ? O_DIRECTORY : 0)
                           : O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    UniqueFd next(::openat(at, parts[i].c_str(), flags));
    if (!next) {
      const int err = errno;
      if (err == ELOOP || err == ENOTDIR) {
        struct stat st {};
        if (::fstatat(at, parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
          throw UsageError(shown + ": '" + parts[i] +
                           "' is a symlink; without openat2 (Linux 5.6) a symlink cannot be "
                           "followed safely, so none is: replace it by the file itself");
      }
      throw UsageError(open_failure(shown, err));
    }
    here = std::move(next);
    at = here.get();
  }
  return checked_type(std::move(here), directory, shown);
}

}  // namespace detail

uint64_t open_file_size(int fd, const std::string& shown) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw UsageError(shown + ": cannot stat (" + std::strerror(errno) + ")");
  return static_cast<uint64_t>(st.st_size);
}

std::string read_all_capped(int fd, uint64_t max_bytes, const std::string& shown,
                            const std::string& why_limit) {
  const std::string limit = "the " + std::to_string(max_bytes) + "-byte limit (" + why_limit + ")";
  const uint64_t size = open_file_size(fd, shown);
  if (size > max_bytes)
    throw UsageError(shown + ": " + std::to_string(size) + " bytes, more than " + limit);
  // One byte past the limit is enough to tell a file that grew while it was read.
  const uint64_t stop = max_bytes == UINT64_MAX ? max_bytes : max_bytes + 1;
  std::string out(static_cast<size_t>(size), '\0');
  uint64_t have = 0;
  for (;;) {
    if (have == out.size())
      out.resize(static_cast<size_t>(std::min<uint64_t>(stop, have + (64 << 10))));
    if (have == out.size()) break;
    const ssize_t n = ::pread(fd, out.data() + have, out.size() - have, static_cast<off_t>(have));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw UsageError(shown + ": read failed at byte " + std::to_string(have) + " (" +
                       std::strerror(errno) + ")");
    }
    if (n == 0) break;
    have += static_cast<uint64_t>(n);
  }
  if (have > max_bytes) throw UsageError(shown + ": grew past " + limit + " while being read");
  out.resize(static_cast<size_t>(have));
  return out;
}

std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes,
                              const std::string& why_limit) {
  const UniqueFd fd = open_regular_file(path, path.string());
  return read_all_capped(fd.get(), max_bytes, path.string(), why_limit);
}

}  // namespace fabkit
