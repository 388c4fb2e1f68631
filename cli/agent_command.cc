// fabcheck agent: the far end of `fabcheck pair` (started by the controller's launcher, not by
// hand). The session token comes from FABKIT_SESSION_TOKEN or the first line of stdin — never
// argv, which every user on the host can read in /proc/PID/cmdline.
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "cli/command.h"
#include "cli/ship_option.h"
#include "common/errors.h"
#include "fabric/agent/agent.h"
#include "fabric/agent/transport_child.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/session_key.h"
#include "fabric/wire/socket_io.h"
#include "fabric/wire/token.h"

namespace fabkit::cli {
namespace {

struct AgentArgs {
  std::string bind;
  int port = 0;
  std::string name;
  int accept_timeout_ms = 30000;
  int idle_timeout_ms = 120000;
  int token_timeout_ms = 10000;
};

std::string read_token(int timeout_ms) {
  if (const char* env = std::getenv("FABKIT_SESSION_TOKEN"); env != nullptr && *env != '\0') return env;
  std::string line;
  auto deadline = wire::deadline_in_ms(timeout_ms);  // for the whole line, not per byte
  for (;;) {
    pollfd p{0, POLLIN, 0};
    if (wire::poll_until(&p, 1, deadline, "the session token on stdin") == 0)
      throw UsageError("no session token: set FABKIT_SESSION_TOKEN or write it as the first line of "
                       "stdin within " + std::to_string(timeout_ms) + " ms (fabcheck pair does this)");
    char c;
    ssize_t r = ::read(0, &c, 1);  // byte by byte: nothing after the first line is consumed
    if (r <= 0 || c == '\n') break;
    if (line.size() > 1024) throw UsageError("the session token on stdin is longer than 1024 characters");
    line.push_back(c);
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

// Every pending handshake holds a descriptor (wire/handshake_gate.h), and the gate closes the
// oldest at its cap or when accept runs out of descriptors; a soft limit of 1024 (the usual
// default) would make that happen long before the cap. Up to the hard limit is ours to use;
// 65536 covers every gate's cap at once without handing a child process a huge table.
void raise_descriptor_limit() {
  constexpr rlim_t kWanted = 65536;
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < std::min(r.rlim_max, kWanted)) {
    r.rlim_cur = std::min(r.rlim_max, kWanted);
    (void)::setrlimit(RLIMIT_NOFILE, &r);  // best effort: the gate copes with fewer
  }
}

int run_agent_cmd(const AgentArgs& a) {
  if (!a.bind.empty() && !wire::is_ipv4_literal(a.bind))
    throw UsageError("--bind " + a.bind + ": give an IPv4 address of this host, e.g. --bind 198.18.0.1");
  agent::AgentOptions o;
  o.bind_addr = a.bind;
  o.port = static_cast<uint16_t>(a.port);
  o.name = a.name;
  o.accept_timeout_ms = a.accept_timeout_ms;
  o.idle_timeout_ms = a.idle_timeout_ms;
  o.shipped = verify_shipped_copy();  // main checked it already; this only reads the answer
  o.token = read_token(a.token_timeout_ms);
  if (auto why = wire::token_problem(o.token); !why.empty())
    throw UsageError(std::string(wire::kWeakTokenError) +
                     ": the session token (FABKIT_SESSION_TOKEN or stdin) " + why + "; " +
                     wire::kTokenFix);
  raise_descriptor_limit();
  (void)wire::session_key(o.token);  // a passphrase's scrypt at start, before the hello
  auto e = agent::run_agent(
      o,
      [](const Json& hello) {
        std::cout << hello.dump() << std::endl;  // the one line the controller waits for
      },
      [&](const std::string& msg) { std::cerr << "fabcheck agent " << a.name << ": " << msg << std::endl; });
  return e == agent::AgentExit::kBye ? 0 : 1;
}

}  // namespace

void register_agent_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<AgentArgs>();
  auto* sub = app.add_subcommand("agent", "Agent for `fabcheck pair` (started by its launcher; "
                                          "token on stdin or FABKIT_SESSION_TOKEN)");
  sub->group("");  // hidden from the top-level help: people run `pair`, which starts agents
  sub->add_option("--bind", args->bind, "Listen on this IPv4 address only (default: all)");
  sub->add_option("--port", args->port, "Listen port (default: ephemeral)")->check(CLI::Range(0, 65535));
  sub->add_option("--name", args->name, "Host name the controller uses, for messages");
  sub->add_option("--accept-timeout-ms", args->accept_timeout_ms, "Wait this long for the controller")
      ->check(CLI::Range(100, 3600000));
  sub->add_option("--idle-timeout-ms", args->idle_timeout_ms, "Exit after this long without a request")
      ->check(CLI::Range(100, 86400000));
  sub->add_option("--token-timeout-ms", args->token_timeout_ms, "Wait this long for the token on stdin")
      ->check(CLI::Range(1, 600000));
  sub->callback([args, exit_code] {
    *exit_code = run_command("agent", false, [&] { return run_agent_cmd(*args); });
  });

  // One all-reduce runner in a child of the agent (fabric/agent/transport_child.h): the agent
  // starts it through /proc/self/exe; by hand it only says so and exits 2.
  auto* runner = app.add_subcommand(agent::kRunnerSubcommand,
                                    "One all-reduce run for `fabcheck agent` (internal)");
  runner->group("");
  runner->callback([exit_code] {
    *exit_code = run_command(agent::kRunnerSubcommand, false, [] { return agent::transport_child_main(); });
  });
}

}  // namespace fabkit::cli
