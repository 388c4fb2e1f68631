#include "fabric/nccl_runner/runner_child.h"

#include <sys/wait.h>

#include "common/errors.h"
#include "fabric/allreduce/allreduce_types.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::fabric {
namespace {

using wire::WireError;
using wire::WireErrorKind;

launch::ChildOptions runner_options(const std::string& program, const std::vector<std::string>& args,
                                    const std::vector<std::string>& envp) {
  launch::ChildOptions o;
  o.argv = {program};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = envp;
  o.keep_stdin_open = true;  // GO / STOP come later
  o.stdout_is_log = true;
  o.stderr_into_stdout = true;
  o.control_fd = true;
  // NCCL at INFO writes a few KB per rank; a runaway child must not grow our memory without bound.
  o.max_log_bytes = 8u << 20;
  o.stop_grace_ms = 0;  // nothing to save in a child we gave up on: SIGKILL
  return o;
}

launch::ChildProcess start(const std::string& program, const std::vector<std::string>& args,
                           const std::vector<std::string>& envp) {
  try {
    return launch::ChildProcess(runner_options(program, args, envp));
  } catch (const SysErrorException& e) {
    throw PeerError("io_error", std::string("cannot start the NCCL runner: ") + e.what());
  }
}

}  // namespace

RunnerChild::RunnerChild(const std::string& program, const std::vector<std::string>& args,
                         const std::vector<std::string>& envp)
    : child_(start(program, args, envp)) {}

void RunnerChild::send_line(const std::string& line, int timeout_ms) {
  try {
    child_.write_stdin(line + "\n", wire::deadline_in_ms(timeout_ms));
  } catch (const WireError& e) {
    if (e.kind() == WireErrorKind::kTimeout)
      throw PeerError("child_timeout", "the NCCL runner child does not read its stdin");
    throw PeerError("child_died", std::string("the NCCL runner child closed its stdin: ") + e.what());
  }
}

std::string RunnerChild::next_line(int timeout_ms, bool* eof) {
  *eof = false;
  try {
    return child_.read_line(launch::ChildProcess::Stream::kControl, wire::deadline_in_ms(timeout_ms), kMaxLineBytes);
  } catch (const WireError& e) {
    switch (e.kind()) {
      case WireErrorKind::kClosed:
        *eof = true;
        return "";
      case WireErrorKind::kTimeout:
        throw PeerError("child_timeout", "the NCCL runner child said nothing for " + std::to_string(timeout_ms) + " ms");
      case WireErrorKind::kOversized:
        throw PeerError("child_protocol", "the NCCL runner child wrote a line over 1 MiB");
      default:
        throw PeerError("io_error", e.what());
    }
  }
}

std::string RunnerChild::wait_exit(int timeout_ms) {
  child_.wait_exit(wire::deadline_in_ms(timeout_ms));
  int status = child_.exit_status();
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace fabkit::fabric
