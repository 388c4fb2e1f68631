// Reading the log: /dev/kmsg (a character device: one record per read, never blocking) or a
// capture's file, then the window and one scan. kernel/printk/printk.c, devkmsg_read: -EAGAIN
// when no record is left (O_NONBLOCK), -EPIPE when the next record was overwritten since the
// last read (the reader moves on to the oldest one still there), -EINVAL when the buffer is too
// small for a record (CONSOLE_EXT_LOG_MAX, 8 KiB: the buffer here is twice that).
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/file_reader.h"
#include "common/root_open.h"
#include "common/unique_fd.h"
#include "probes/kernel_log/kernel_log_facts.h"

namespace fabkit::probes {
namespace {

constexpr size_t kRecordBuffer = 16 * 1024;
// A capture bigger than this is not a kernel log (the ring buffer is a few MiB at most).
constexpr size_t kMaxFileBytes = 256u << 20;
// A log storm could keep a reader chasing new records forever: stop after this long.
constexpr auto kMaxReadTime = std::chrono::milliseconds(2000);

std::string errno_text(int e) {
  return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")";
}

std::optional<int64_t> boot_time(const std::filesystem::path& proc) {
  auto t = read_text(proc / "stat", 1 << 20);
  if (!ok(t)) return std::nullopt;
  const std::string& s = value(t);
  size_t p = s.find("\nbtime ");
  if (p == std::string::npos) return std::nullopt;
  return std::strtoll(s.c_str() + p + 7, nullptr, 10);
}

std::string denied_reason(const ProbeContext& ctx, const std::string& path, int err) {
  std::string why = path + ": " + errno_text(err);
  auto restrict_ = read_line(ctx.roots.proc / "sys/kernel/dmesg_restrict");
  if (err == EPERM || err == EACCES)
    why += restrict_ && *restrict_ == "1"
               ? ": kernel.dmesg_restrict is 1, so reading the kernel log needs CAP_SYSLOG; run "
                 "fabcheck as root (the Slurm health check runs as root) or set "
                 "kernel.dmesg_restrict=0"
               : ": reading the kernel log needs permission to open it; run fabcheck as root";
  return why;
}

std::vector<KernelLogRecord> read_device(int fd, KernelLogFacts& f) {
  std::vector<KernelLogRecord> out;
  std::string buf(kRecordBuffer, '\0');
  const auto start = std::chrono::steady_clock::now();
  std::optional<uint64_t> prev_seq;
  while (true) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) continue;  // overwritten; the seq gap counts what was lost
      if (errno != EAGAIN) f.unreadable_reason = f.source + ": read: " + errno_text(errno);
      break;
    }
    if (n == 0) break;
    uint64_t seq = 0;
    if (auto r = parse_kmsg_record(std::string_view(buf.data(), static_cast<size_t>(n)), &seq)) {
      if (!f.first_seq) f.first_seq = seq;
      if (prev_seq && seq > *prev_seq + 1) f.lost_records += seq - *prev_seq - 1;
      prev_seq = seq;
      out.push_back(std::move(*r));
    }
    if (std::chrono::steady_clock::now() - start > kMaxReadTime) {
      f.window_note += (f.window_note.empty() ? "" : "; ") +
                       std::string(
                           "stopped reading after 2 s: the kernel logs faster than it can "
                           "be read (a log storm)");
      break;
    }
  }
  f.format = "kmsg";
  return out;
}

void set_window(const ProbeContext& ctx, KernelLogFacts& f) {
  const auto& since = ctx.options.kernel_log_since;
  if (!since) return;
  f.since = since->text;
  if (since->seconds_ago) {
    if (ctx.roots.live) {
      // printk stamps records with local_clock(), which counts like CLOCK_MONOTONIC.
      struct timespec ts {};
      clock_gettime(CLOCK_MONOTONIC, &ts);
      f.since_boot_s = ts.tv_sec + ts.tv_nsec / 1e9 - *since->seconds_ago;
    } else if (f.last_s) {
      f.since_boot_s = *f.last_s - *since->seconds_ago;
      f.window_note = "a capture: --since " + since->text + " counts back from its last record";
    } else {
      f.window_note = "--since " + since->text +
                      ": the capture's records carry no time since boot, so every record counts";
    }
  } else if (since->unix_time_s) {
    if (f.boot_time_unix_s)
      f.since_boot_s = static_cast<double>(*since->unix_time_s - *f.boot_time_unix_s);
    else
      f.window_note = "--since " + since->text + ": the boot time is unknown (" +
                      (ctx.roots.proc / "stat").string() +
                      " has no btime line), so every record counts";
  }
  if (f.since_boot_s && *f.since_boot_s < 0) f.since_boot_s = 0;
}

}  // namespace

KernelLogFacts gather_kernel_log(const ProbeContext& ctx, const KernelLogDevices& devices) {
  KernelLogFacts f;
  f.gpu_bus_ids = devices.gpus;
  const auto start = std::chrono::steady_clock::now();
  f.boot_time_unix_s = boot_time(ctx.roots.proc);
  const std::filesystem::path path = ctx.roots.dev / "kmsg";
  f.source = path.string();
  std::vector<KernelLogRecord> records;
  // Under --sysroot, resolved inside the tree and a regular file only (common/root_open.h).
  auto opened = open_for_reading(path, O_NONBLOCK);
  UniqueFd fd;
  if (auto* e = std::get_if<UniqueFd>(&opened)) fd = std::move(*e);
  const SysError* open_error = std::get_if<SysError>(&opened);
  struct stat st {};
  if (open_error) {
    f.unreadable_reason = open_error->err == ENOENT && !ctx.roots.live
                              ? path.string() + " is absent"
                          : !ctx.roots.live ? open_error->to_string()
                                            : denied_reason(ctx, path.string(), open_error->err);
  } else if (::fstat(fd.get(), &st) != 0) {
    f.unreadable_reason = path.string() + ": fstat: " + errno_text(errno);
  } else if (S_ISCHR(st.st_mode)) {
    records = read_device(fd.get(), f);
    f.readable = f.unreadable_reason.empty() || !records.empty();
  } else if (S_ISREG(st.st_mode)) {
    if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
      f.unreadable_reason = path.string() + " is " + std::to_string(st.st_size) +
                            " bytes: not a kernel log (at most 256 MiB is read)";
    } else {
      // Sized by fstat, read from the descriptor already open (read_text would reserve the
      // whole 256 MiB bound first).
      std::string text(static_cast<size_t>(st.st_size), '\0');
      size_t got = 0;
      int read_errno = 0;
      while (got < text.size()) {
        ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) read_errno = errno;
        if (n <= 0) break;
        got += static_cast<size_t>(n);
      }
      if (read_errno != 0) {
        f.unreadable_reason = path.string() + ": read: " + errno_text(read_errno);
      } else {
        text.resize(got);
        records = parse_kernel_log_text(text, &f.format);
        f.readable = true;
      }
    }
  } else {
    f.unreadable_reason = path.string() + " is neither the kmsg device nor a regular file";
  }
  place_wall_times(records, f.boot_time_unix_s);
  // The span first (a capture's --since counts back from its last record), then the window.
  for (const auto& r : records)
    if (r.time_s) {
      if (!f.last_s || *r.time_s > *f.last_s) f.last_s = r.time_s;
    }
  set_window(ctx, f);
  f.last_s.reset();
  scan_kernel_log(records, devices.names, f);
  f.read_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return f;
}

}  // namespace fabkit::probes
