// Every all-reduce runner runs in a child process of the agent: this same fabcheck binary,
// started through /proc/self/exe with the hidden subcommand `fabcheck agent-runner`. The runners
// load libraries the agent does not control (Gloo, libibverbs providers, NCCL through its own
// child), and one of them aborting (Debian's Gloo threw from a destructor over soft-RoCE:
// std::terminate, SIGABRT) took the whole agent down, and with it every step still to come. In a
// child, an abort, a std::terminate or a segfault ends only that transport's run: the agent
// answers "failed" with error kind runner_crashed, the signal and the child's last stderr lines,
// and keeps serving the controller.
//
// Protocol (one run per child):
//   agent -> child stdin: one JSON line {"transport", "args" (the "allreduce" request's arguments
//                         as received), "token", "parent_pid"}; then EOF.
//   child -> agent fd 3:  "PROGRESS <done> <total>" after each size of the sweep;
//                         "RESULT <one-line JSON TransportRun>" or "ERROR <code> <message>"
//                         (an AgentOpError: unknown transport, bad arguments), then exit 0.
//   child stdout: drained and dropped (bounded); stderr: an unlinked temp file, whose tail is the
//   "last words" quoted when the child dies.
// The child is killed (its process group, SIGKILL) at the sweep's deadline, and it dies with the
// agent (PR_SET_PDEATHSIG), so no runner outlives the session.
//
// Test hook: FABKIT_TEST_RUNNER_FAULT=<transport>:<abort|segv|terminate|hang|exit> in the agent's
// environment makes the child of that transport fail that way after the first size of its sweep
// (or before its answer when it measures none), writing a line naming the hook to stderr first.
// It can only break the runs of the agent whose environment sets it (docs/pair.md, "Runner
// children"); tests/integration/pair/test_pair_runner_child.py uses it.
#pragma once

#include <functional>
#include <string>

#include "common/json.h"

namespace fabkit::agent {

inline constexpr char kRunnerSubcommand[] = "agent-runner";
inline constexpr char kRunnerFaultEnv[] = "FABKIT_TEST_RUNNER_FAULT";

struct RunnerChildSpec {
  // The fabcheck executable to start: /proc/self/exe in the agent (the very binary that is
  // running, even if its file was replaced or removed since; never a PATH or cwd lookup). Tests
  // that run an agent inside a test binary name the built fabcheck instead.
  std::string program = "/proc/self/exe";
  std::string transport;
  Json args;  // the "allreduce" request's arguments, already validated by the agent
  std::string token;
  int deadline_ms = 0;  // the whole sweep, from the start of the child to its answer
};

// Runs one transport in a child and returns its TransportRun JSON. A child that dies, says
// nothing usable or overruns deadline_ms gives status "failed" with extra.error runner_crashed /
// runner_protocol / runner_timeout, extra.child_exit and extra.last_words; never throws for
// those. Throws AgentOpError for the child's ERROR line (as the in-process runner would have).
// on_size_done: each PROGRESS line (sizes done, total).
Json run_transport_in_child(const RunnerChildSpec& spec,
                            const std::function<void(size_t, size_t)>& on_size_done);

// The child's side: reads the request on stdin, runs the transport here, answers on fd 3.
// Returns the process exit code (0 when an answer was written; 2 when started by hand without the
// agent's pipes).
int transport_child_main();

// The last lines of a child's stderr, at most max_lines lines and max_bytes bytes, without a
// line cut in half (pure: tested on its own).
std::string last_words(const std::string& stderr_tail, size_t max_lines = 8, size_t max_bytes = 1200);

}  // namespace fabkit::agent
