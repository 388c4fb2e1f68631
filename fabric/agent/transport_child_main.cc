// The runner child's side (transport_child.h): `fabcheck agent-runner`, started by the agent only.
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/json_read.h"
#include "fabric/agent/agent_commands.h"
#include "fabric/agent/agent_ofi.h"
#include "fabric/agent/agent_requests.h"
#include "fabric/agent/agent_transports.h"
#include "fabric/agent/transport_child.h"
#include "fabric/wire/socket_io.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::agent {
namespace {

constexpr int kAnswerFd = 3;
constexpr size_t kMaxRequestBytes = 1 << 20;
constexpr int kRequestTimeoutMs = 10000;

// fd 3 is a pipe to the agent, blocking on our side: a line is written whole or the agent is
// gone (SIGPIPE ends us, as it should). A message's own newlines would break the line protocol.
void answer(std::string line) {
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  const std::string text = line + "\n";
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(kAnswerFd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(3);
    off += static_cast<size_t>(n);
  }
}

std::string read_request() {
  std::string text;
  const auto deadline = wire::deadline_in_ms(kRequestTimeoutMs);
  char buf[4096];
  for (;;) {
    pollfd p{0, POLLIN, 0};
    if (wire::poll_until(&p, 1, deadline, "the runner request on stdin") == 0)
      throw std::runtime_error("no runner request on stdin within " +
                               std::to_string(kRequestTimeoutMs) + " ms");
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(std::string("read stdin: ") + std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxRequestBytes) throw std::runtime_error("runner request over 1 MiB");
  }
}

// FABKIT_TEST_RUNNER_FAULT (transport_child.h): the ways a runner's library has been seen to die,
// on demand, so the agent's handling of each is tested with the real process machinery.
struct FaultHook {
  std::string fault;  // "" = none for this transport
  void fire() const {
    if (fault.empty()) return;
    std::cerr << "fabcheck agent-runner: test hook " << kRunnerFaultEnv << " asks for '" << fault
              << "' now" << std::endl;
    if (fault == "abort") std::abort();
    if (fault == "segv") ::raise(SIGSEGV);
    if (fault == "exit") std::_Exit(7);
    if (fault == "hang")
      for (;;) ::pause();
    if (fault == "terminate") {
      // What Gloo's ibverbs buffer did: an exception where none may pass (here: out of a
      // thread's function), so the runtime calls std::terminate.
      std::thread([] {
        throw std::runtime_error("test hook: an exception nobody catches");
      }).join();
    }
    std::cerr << "fabcheck agent-runner: " << kRunnerFaultEnv << " names an unknown fault '"
              << fault << "' (abort, segv, terminate, hang, exit)" << std::endl;
    std::_Exit(4);
  }
};

FaultHook fault_hook(const std::string& transport) {
  const char* v = std::getenv(kRunnerFaultEnv);
  if (v == nullptr) return {};
  const std::string s = v;
  const auto colon = s.find(':');
  if (colon == std::string::npos || s.substr(0, colon) != transport) return {};
  return {s.substr(colon + 1)};
}

std::string dump(const Json& j) {
  // A library's message may hold any bytes: replaced, never a throw on the way out.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

int transport_child_main() {
  if (::fcntl(kAnswerFd, F_GETFD) < 0) {
    std::cerr << "fabcheck " << kRunnerSubcommand
              << ": this subcommand is internal to `fabcheck agent` (it runs one all-reduce runner "
                 "in a child process of the agent); run `fabcheck pair` instead"
              << std::endl;
    return 2;
  }
  // Die with the agent: a runner must not outlive the session it measures for.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  Json req;
  try {
    req = parse_json(read_request(), "the runner request");
    if (!req.is_object() || !req.contains("transport") || !req["transport"].is_string() ||
        !req.contains("args") || !req.contains("token") || !req["token"].is_string() ||
        !req.contains("parent_pid") || !req["parent_pid"].is_number_integer())
      throw std::runtime_error("the runner request is not {transport, args, token, parent_pid}");
  } catch (const std::exception& e) {
    answer(std::string("ERROR agent.runner_request ") + e.what());
    return 0;
  }
  // The agent died before PR_SET_PDEATHSIG took hold: nobody is waiting for this run.
  if (::getppid() != req["parent_pid"].get<int>()) return 3;
  const std::string transport = req["transport"].get<std::string>();
  const FaultHook hook = fault_hook(transport);
  bool fired = false;
  auto on_size_done = [&](size_t done, size_t total) {
    answer("PROGRESS " + std::to_string(done) + " " + std::to_string(total));
    if (!fired) {
      fired = true;
      hook.fire();
    }
  };
  Json result;
  try {
    if (transport == kOfiRunnerName) {
      // No sizes to report progress on: the hook fires before the test, so a hung or aborting
      // provider is what the peer and the controller see.
      const OfiArgs o = parse_ofi_args(req["args"]);
      fired = true;
      hook.fire();
      result = run_ofi_op(o, req["token"].get<std::string>());
    } else {
      const TransportArgs t = parse_transport_args(req["args"]);
      result =
          run_agent_transport_here(transport, t, req["token"].get<std::string>(), on_size_done);
    }
  } catch (const AgentOpError& e) {
    answer("ERROR " + e.code() + " " + e.what());
    return 0;
  } catch (const wire::WireError& e) {
    answer(std::string("ERROR ") + wire::to_string(e.kind()) + " " + e.what());
    return 0;
  } catch (const std::exception& e) {
    answer(std::string("ERROR agent.internal ") + e.what());
    return 0;
  }
  if (!fired) hook.fire();
  answer("RESULT " + dump(result));
  return 0;
}

}  // namespace fabkit::agent
