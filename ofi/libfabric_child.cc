#include "ofi/libfabric_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "common/json_read.h"
#include "common/spawn.h"
#include "common/unique_fd.h"
#include "common/wait_status.h"
#include "ofi/libfabric_api.h"
#include "ofi/ofi_json.h"

namespace fabkit::ofi {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxOutputBytes = 1 << 20;

OfiDiscovery failed(const std::string& why) {
  OfiDiscovery d;
  d.source = "libfabric";
  d.library.error = why;
  return d;
}

class ChildOfiApi final : public OfiApi {
 public:
  ChildOfiApi(std::string program, int timeout_ms)
      : program_(std::move(program)), timeout_ms_(timeout_ms) {}

  OfiDiscovery discover() override {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return failed(std::string("pipe: ") + std::strerror(errno));
    if (::pipe2(err, O_CLOEXEC) != 0) {
      ::close(out[0]);
      ::close(out[1]);
      return failed(std::string("pipe: ") + std::strerror(errno));
    }
    UniqueFd out_r(out[0]), out_w(out[1]), err_r(err[0]), err_w(err[1]);
    SpawnOptions o;
    o.program = program_;
    o.own_process_group = true;
    o.fds = {{out_w.get(), 1}, {err_w.get(), 2}};
    pid_t pid = -1;
    if (int rc = spawn_process({"fabcheck", kDiscoverSubcommand}, o, &pid))
      return failed("could not start the libfabric discovery child (" + program_ + " " +
                    kDiscoverSubcommand + "): " + std::strerror(rc));
    out_w.reset();
    err_w.reset();
    std::string text, errors;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
    bool timed_out = false;
    pollfd p[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
    int open = 2;
    while (open > 0) {
      int left = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
      if (left <= 0) {
        timed_out = true;
        break;
      }
      int n = ::poll(p, 2, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      for (int i = 0; i < 2; ++i) {
        if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[4096];
        ssize_t r = ::read(p[i].fd, buf, sizeof buf);
        if (r > 0) {
          std::string& to = i == 0 ? text : errors;
          if (to.size() < kMaxOutputBytes) to.append(buf, static_cast<size_t>(r));
        } else if (r == 0 || errno != EINTR) {
          p[i].fd = -1;
          --open;
        }
      }
    }
    if (timed_out) ::kill(-pid, SIGKILL);
    int status = 0;
    // After a kill, or once both pipes closed, the child is gone or about to be.
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const std::string child = "the libfabric discovery child (pid " + std::to_string(pid) + ")";
    std::string tail = errors.size() > 600 ? "..." + errors.substr(errors.size() - 600) : errors;
    for (char& c : tail)
      if (c == '\n') c = ' ';
    const std::string said = tail.empty() ? "" : "; its stderr: " + tail;
    if (timed_out)
      return failed(child + " did not answer within " + std::to_string(timeout_ms_) +
                    " ms and was killed" + said);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      return failed(child + " " + describe_wait_status(status) + " while loading libfabric" + said);
    try {
      OfiDiscovery d = discovery_from_json(parse_json(text, child), child);
      d.source = "libfabric";
      return d;
    } catch (const std::exception& e) {
      return failed(child + " answered something else than its JSON: " + e.what());
    }
  }

 private:
  std::string program_;
  int timeout_ms_;
};

}  // namespace

bool is_fabcheck_program(const std::string& program) {
  std::error_code ec;
  std::filesystem::path p = program == "/proc/self/exe" ? std::filesystem::read_symlink(program, ec)
                                                        : std::filesystem::path(program);
  if (ec) return false;
  return p.filename().string().rfind("fabcheck", 0) == 0;
}

std::unique_ptr<OfiApi> make_libfabric_child_api(std::string program, int timeout_ms) {
  return std::make_unique<ChildOfiApi>(std::move(program), timeout_ms);
}

int discover_child_main(const Environment& env) {
  std::cout << discovery_to_json(make_libfabric_api(env)->discover()).dump() << std::endl;
  return 0;
}

}  // namespace fabkit::ofi
