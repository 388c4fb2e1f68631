#include "common/input_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/errors.h"
#include "common/human_bytes.h"
#include "common/unique_fd.h"

namespace fabkit {
namespace {

constexpr size_t kPieceBytes = 1 << 20;

bool is_stdin(const std::string& path, const InputSpec& spec) {
  return spec.allow_stdin && path == "-";
}

[[noreturn]] void refuse(const std::string& path, const InputSpec& spec, const std::string& why) {
  throw UsageError((spec.what.empty() ? "" : spec.what + " ") +
                   (is_stdin(path, spec) ? "standard input" : path) + ": " + why +
                   (spec.fix.empty() ? "" : "; " + spec.fix));
}

[[noreturn]] void refuse_errno(const std::string& path, const InputSpec& spec, const char* doing) {
  refuse(path, spec, std::string(doing) + ": " + std::strerror(errno));
}

bool readable_type(mode_t m) { return S_ISREG(m) || S_ISFIFO(m); }

std::string type_name(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// Over the cap: `n` bytes counted (for a stream, cap+1: all that was read).
[[noreturn]] void too_large(const std::string& path, const InputSpec& spec, uint64_t n,
                            bool stream) {
  const std::string limit = "over the limit of " + std::to_string(spec.max_bytes) + " bytes";
  std::string why = "more than " + human_bytes(spec.max_bytes);
  if (spec.counted_before)
    why += " together with the inputs before it (" + std::to_string(n) + " bytes in all, " + limit +
           ")";
  else if (stream)
    why += " (still going after " + std::to_string(n) + " bytes, " + limit + ")";
  else
    why += " (" + std::to_string(n) + " bytes, " + limit + ")";
  refuse(path, spec, why);
}

std::string duration_text(int ms) {
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

void set_blocking(int fd, const std::string& path, const InputSpec& spec) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
    refuse_errno(path, spec, "cannot read");
}

// A named input, opened without following it into a device: the O_PATH descriptor's type is
// checked before anything opens the file for reading (an O_PATH open calls no driver), and the
// reopen through /proc/self/fd reaches that same inode, so a swap between the check and the
// reopen cannot put a device or another file there.
UniqueFd open_named(const std::string& path, const InputSpec& spec, struct stat* st) {
  UniqueFd handle(::open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!handle) refuse_errno(path, spec, "cannot open");
  if (::fstat(handle.get(), st) != 0) refuse_errno(path, spec, "cannot stat");
  if (!readable_type(st->st_mode))
    refuse(path, spec, "is " + type_name(st->st_mode) + ", not a file or a pipe");
  // Non-blocking: a FIFO that no process writes would block open() until one does.
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  UniqueFd fd(::open(("/proc/self/fd/" + std::to_string(handle.get())).c_str(), kFlags));
  if (!fd && errno == ENOENT) {  // no /proc (a bare chroot): by name, then the same check
    fd.reset(::open(path.c_str(), kFlags));
    struct stat again {};
    if (fd && (::fstat(fd.get(), &again) != 0 || again.st_dev != st->st_dev ||
               again.st_ino != st->st_ino))
      refuse(path, spec, "changed while it was opened; give a file no one else is writing");
  }
  if (!fd) refuse_errno(path, spec, "cannot open");
  // A FIFO stays non-blocking until a writer shows itself (read_capped); a file never blocks.
  if (S_ISREG(st->st_mode)) set_blocking(fd.get(), path, spec);
  return fd;
}

// Reads to the end or to cap+1 bytes, whichever comes first. A FIFO opened without a writer
// (`awaiting_writer`, still non-blocking) reads 0 until a process opens it for writing: that wait
// is bounded by spec.fifo_writer_wait_ms; once a writer is there, reads block as on any pipe.
uint64_t read_capped(int fd, bool regular, bool awaiting_writer, const std::string& path,
                     const InputSpec& spec, const std::function<void(std::string_view)>& piece) {
  const uint64_t before = std::min(spec.counted_before, spec.max_bytes);
  const uint64_t room = spec.max_bytes - before;  // this input may add this much
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(spec.fifo_writer_wait_ms);
  std::string buf(kPieceBytes, '\0');
  uint64_t total = 0;
  for (;;) {
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(buf.size(), room - std::min(room, total) + 1));
    const ssize_t n = ::read(fd, buf.data(), want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) refuse_errno(path, spec, "cannot read");
    if (n == 0 && awaiting_writer) {
      // No writer yet (with one, an empty FIFO says EAGAIN): look again shortly. poll() cannot
      // wait for the writer itself, only for its data or its leaving.
      const auto now = std::chrono::steady_clock::now();
      if (now >= give_up)
        refuse(path, spec,
               "a FIFO that no process opened for writing within " +
                   duration_text(spec.fifo_writer_wait_ms));
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(give_up - now);
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 50)));
      if (ready < 0 && errno != EINTR) refuse_errno(path, spec, "cannot read");
      if (ready > 0 && !(p.revents & POLLIN)) return total;  // a writer came and went, silent
      continue;
    }
    if (n < 0 || awaiting_writer) {  // a writer is there (EAGAIN: it has not written yet)
      if (awaiting_writer) set_blocking(fd, path, spec);
      awaiting_writer = false;
      if (n < 0) {  // standard input left non-blocking by whoever started us
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, -1) < 0 && errno != EINTR) refuse_errno(path, spec, "cannot read");
        continue;
      }
    }
    if (n == 0) return total;
    total += static_cast<uint64_t>(n);
    if (total > room) too_large(path, spec, before + total, !regular);
    piece(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
}

template <typename Fn>
uint64_t with_input(const std::string& path, const InputSpec& spec, Fn&& fn) {
  struct stat st {};
  UniqueFd owned;
  int fd = STDIN_FILENO;
  if (is_stdin(path, spec)) {
    if (::fstat(fd, &st) != 0) refuse_errno(path, spec, "cannot stat");
  } else {
    owned = open_named(path, spec, &st);
    fd = owned.get();
  }
  const bool regular = S_ISREG(st.st_mode);
  // A regular file says its size: refused before a byte is read.
  if (regular && static_cast<uint64_t>(st.st_size) + spec.counted_before > spec.max_bytes)
    too_large(path, spec, static_cast<uint64_t>(st.st_size) + spec.counted_before, false);
  return fn(fd, regular, owned.valid() && !regular, static_cast<uint64_t>(st.st_size));
}

}  // namespace

std::string read_input(const std::string& path, const InputSpec& spec) {
  std::string text;
  with_input(path, spec, [&](int fd, bool regular, bool fifo, uint64_t size) {
    if (regular) text.reserve(static_cast<size_t>(size));
    return read_capped(fd, regular, fifo, path, spec, [&](std::string_view p) { text.append(p); });
  });
  return text;
}

uint64_t read_input_pieces(const std::string& path, const InputSpec& spec,
                           const std::function<void(std::string_view)>& piece) {
  return with_input(path, spec, [&](int fd, bool regular, bool fifo, uint64_t) {
    return read_capped(fd, regular, fifo, path, spec, piece);
  });
}

}  // namespace fabkit
