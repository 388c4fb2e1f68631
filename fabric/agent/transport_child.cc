// The agent's side of the runner child (transport_child.h).
#include "fabric/agent/transport_child.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "common/json_read.h"
#include "common/wait_status.h"
#include "fabric/agent/agent_commands.h"
#include "fabric/launch/child_process.h"
#include "fabric/wire/wire_error.h"

namespace fabkit::agent {
namespace {

using wire::WireError;
using wire::WireErrorKind;

// A RESULT line is one TransportRun: 64 sizes of a few hundred bytes, and an NCCL run's log
// summary; a megabyte is far above any honest one and bounds what a broken child makes us hold.
constexpr size_t kMaxLineBytes = 1 << 20;
// What the child prints on stdout is nobody's protocol: drained so it never blocks, kept small.
constexpr size_t kMaxStdoutBytes = 64 << 10;
// After the child's answer (or fd 3's end) it has this long to exit before it is killed: a
// runner whose library hangs in its teardown must not hold the agent.
constexpr int kExitAfterAnswerMs = 5000;

struct Answer {
  std::optional<Json> result;
  std::optional<std::pair<std::string, std::string>> op_error;  // ERROR code message
  std::string protocol_problem;                                  // a line we cannot read
  bool timed_out = false;
  size_t done = 0, total = 0;
};

bool parse_progress(const std::string& rest, size_t* done, size_t* total) {
  size_t d = 0, t = 0;
  char tail = 0;
  if (std::sscanf(rest.c_str(), "%zu %zu%c", &d, &t, &tail) != 2 || d > t || t > 4096) return false;
  *done = d;
  *total = t;
  return true;
}

// Reads fd 3 until it closes, the deadline passes or the child breaks the protocol.
Answer read_answer(launch::ChildProcess& child, wire::Deadline deadline,
                   const std::function<void(size_t, size_t)>& on_size_done) {
  Answer a;
  for (;;) {
    std::string line;
    try {
      line = child.read_line(launch::ChildProcess::Stream::kControl, deadline, kMaxLineBytes);
    } catch (const WireError& e) {
      if (e.kind() == WireErrorKind::kTimeout) a.timed_out = true;
      if (e.kind() == WireErrorKind::kOversized) a.protocol_problem = "a line over 1 MiB on fd 3";
      if (e.kind() == WireErrorKind::kIo) a.protocol_problem = e.what();
      return a;  // kClosed: the child is done (or dead)
    }
    const auto space = line.find(' ');
    const std::string word = line.substr(0, space);
    const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    if (word == "PROGRESS" && parse_progress(rest, &a.done, &a.total)) {
      if (on_size_done) on_size_done(a.done, a.total);
    } else if (word == "RESULT" && !a.result && !a.op_error) {
      try {
        Json j = parse_json(rest, "the runner child's RESULT");
        if (!j.is_object()) {
          a.protocol_problem = "the RESULT line is not a JSON object";
          return a;
        }
        a.result = std::move(j);
      } catch (const JsonReadError& e) {
        a.protocol_problem = e.what();
        return a;
      }
    } else if (word == "ERROR" && !a.result && !a.op_error) {
      const auto sp = rest.find(' ');
      a.op_error.emplace(rest.substr(0, sp), sp == std::string::npos ? "" : rest.substr(sp + 1));
    } else {
      a.protocol_problem = "unexpected line on fd 3: '" + line.substr(0, 80) + "'";
      return a;
    }
  }
}

Json failed_run(const std::string& transport, const std::string& kind, const std::string& reason) {
  return {{"transport", transport},
          {"status", "failed"},
          {"reason", reason},
          {"sizes", Json::array()},
          {"extra", {{"error", kind}}}};
}

std::string one_line(const std::string& words) {
  std::string out;
  for (char c : words) out += c == '\n' ? std::string(" | ") : std::string(1, c);
  return out;
}

}  // namespace

std::string last_words(const std::string& tail, size_t max_lines, size_t max_bytes) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < tail.size()) {
    size_t nl = tail.find('\n', start);
    if (nl == std::string::npos) nl = tail.size();
    std::string l = tail.substr(start, nl - start);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (!l.empty()) lines.push_back(std::move(l));
    start = nl + 1;
  }
  std::string out;
  for (size_t i = lines.size(); i-- > 0 && lines.size() - i <= max_lines;) {
    const std::string& l = lines[i];
    if (out.empty() && l.size() > max_bytes) return "..." + l.substr(l.size() - max_bytes);
    if (out.size() + l.size() + 1 > max_bytes) break;
    out = out.empty() ? l : l + "\n" + out;
  }
  return out;
}

Json run_transport_in_child(const RunnerChildSpec& spec,
                            const std::function<void(size_t, size_t)>& on_size_done) {
  const auto deadline = wire::deadline_in_ms(spec.deadline_ms);
  launch::ChildOptions o;
  o.argv = {"fabcheck", kRunnerSubcommand};
  o.program = spec.program;
  // Its own group, so the stop at the deadline also ends what the runner started (the NCCL
  // runner's own child).
  o.own_process_group = true;
  o.stdin_text = Json{{"transport", spec.transport},
                      {"args", spec.args},
                      {"token", spec.token},
                      {"parent_pid", static_cast<int>(::getpid())}}
                     .dump() +
                 "\n";
  o.stdout_is_log = true;
  o.max_log_bytes = kMaxStdoutBytes;
  o.control_fd = true;
  o.stop_grace_ms = 0;  // nothing to save in a runner we gave up on: SIGKILL
  std::unique_ptr<launch::ChildProcess> child;
  try {
    child = std::make_unique<launch::ChildProcess>(o);
  } catch (const SysErrorException& e) {
    return failed_run(spec.transport, "runner_not_started",
                      "the agent could not start its runner child (" + spec.program + " " +
                          kRunnerSubcommand + "): " + e.what());
  }
  const pid_t pid = child->pid();
  Answer a = read_answer(*child, deadline, on_size_done);
  if (a.timed_out)
    child->stop(0);
  else
    child->wait_exit(std::min(deadline, wire::deadline_in_ms(kExitAfterAnswerMs)));
  const bool exited_cleanly = !a.timed_out && child->exited() &&
                              WIFEXITED(child->exit_status()) &&
                              WEXITSTATUS(child->exit_status()) == 0;
  const std::string how = describe_wait_status(child->exit_status());
  const std::string words = last_words(child->stderr_tail(4096));
  const std::string progress = a.total > 0 ? " after " + std::to_string(a.done) + " of " +
                                                 std::to_string(a.total) + " sizes"
                                           : " before its first size";
  const std::string quoted = words.empty() ? "; it wrote nothing on stderr"
                                           : "; its last stderr lines: " + one_line(words);
  const std::string runner =
      "the " + spec.transport + " runner (child pid " + std::to_string(pid) + ")";

  if (a.op_error && exited_cleanly) throw AgentOpError(a.op_error->first, a.op_error->second);
  Json out;
  if (a.timed_out) {
    out = failed_run(spec.transport, "runner_timeout",
                     runner + " did not answer within the sweep's bound of " +
                         std::to_string(spec.deadline_ms) + " ms" + progress +
                         " and was killed" + quoted);
  } else if (!a.protocol_problem.empty()) {
    out = failed_run(spec.transport, "runner_protocol",
                     runner + " broke the runner protocol (" + a.protocol_problem + "); it " +
                         how + quoted);
  } else if (!exited_cleanly) {
    // Killed by a signal (an abort, std::terminate, a segfault), or an exit status other than 0.
    // An answer it gave before dying is kept (its figures are real), but the run failed: a
    // library that dies in its teardown kills a training job the same way.
    const bool answered = a.result.has_value() || a.op_error.has_value();
    const std::string when = answered ? " after its answer" : progress;
    const std::string reason = runner + " was " +
                               (how.rfind("killed", 0) == 0 ? how : "ended with " + how) + when +
                               quoted;
    out = a.result ? *a.result : failed_run(spec.transport, "runner_crashed", reason);
    out["status"] = "failed";
    std::string before;
    if (a.result && out.contains("reason") && out["reason"].is_string()) before = out["reason"];
    out["reason"] = before.empty() ? reason : before + "; " + reason;
    if (!out.contains("extra") || !out["extra"].is_object()) out["extra"] = Json::object();
    out["extra"]["error"] = "runner_crashed";
  } else if (!a.result) {
    out = failed_run(spec.transport, "runner_protocol",
                     runner + " exited without an answer" + progress + quoted);
  } else {
    out = *a.result;
  }
  if (!out.contains("extra") || !out["extra"].is_object()) out["extra"] = Json::object();
  out["extra"]["child_exit"] = a.timed_out ? "killed at the deadline (" + how + ")" : how;
  if (!exited_cleanly) out["extra"]["last_words"] = words;
  if (!exited_cleanly && a.total > 0) {
    out["extra"]["sizes_done"] = a.done;
    out["extra"]["sizes_total"] = a.total;
  }
  return out;
}

}  // namespace fabkit::agent
