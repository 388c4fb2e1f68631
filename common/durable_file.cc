#include "common/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/errors.h"
#include "common/unique_fd.h"

namespace fabkit {
namespace {

[[noreturn]] void fail(const char* call, int err, const std::filesystem::path& object) {
  throw SysErrorException({call, err, object.string()});
}

void write_all(int fd, const void* data, size_t bytes, const std::filesystem::path& path) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", errno, path);
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

}  // namespace

void fsync_directory(const std::filesystem::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) fail("open", errno, dir);
  if (::fsync(fd.get()) != 0) fail("fsync", errno, dir);
}

void write_file_durably(const std::filesystem::path& path, const std::function<void(const ByteSink&)>& produce) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  try {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd) fail("open", errno, tmp);
    produce([&](const void* data, size_t bytes) { write_all(fd.get(), data, bytes, tmp); });
    if (::fsync(fd.get()) != 0) fail("fsync", errno, tmp);
    if (::close(fd.release()) != 0) fail("close", errno, tmp);  // NFS reports write errors here
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename", errno, tmp.string() + " -> " + path.string());
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  fsync_directory(dir);
}

void write_file_durably(const std::filesystem::path& path, std::string_view content) {
  write_file_durably(path, [&](const ByteSink& sink) { sink(content.data(), content.size()); });
}

}  // namespace fabkit
