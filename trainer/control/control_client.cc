#include "trainer/control/control_client.h"

#include <signal.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <vector>

#include "common/errors.h"
#include "common/json_read.h"
#include "fabric/wire/wire_error.h"
#include "reports/text/control_text.h"
#include "reports/text/terminal_safe.h"
#include "trainer/control/endpoint.h"
#include "trainer/control/protocol.h"
#include "trainer/control/unix_socket.h"

namespace fabkit::trainer::control {
namespace fs = std::filesystem;
using reports::text::terminal_safe;
using wire::WireError;
using wire::WireErrorKind;

Json request(const std::string& socket_path, const std::string& command, int timeout_ms) {
  const wire::Deadline deadline = wire::deadline_in_ms(timeout_ms);
  int err = 0;
  UniqueFd fd = connect_unix(socket_path, &err);
  if (!fd) {
    if (err == EAGAIN)
      throw WireError(WireErrorKind::kTimeout, "the job's control socket has a full backlog");
    throw SysErrorException({"connect", err, socket_path});
  }
  const std::string line = Json{{"protocol", kProtocolVersion}, {"command", command}}.dump() + "\n";
  wire::write_all(fd.get(), line.data(), line.size(), deadline, "control request");
  const std::string reply = read_line(fd.get(), 1 << 20, deadline, "control reply");
  try {
    return parse_json(reply, "control reply");
  } catch (const JsonReadError& e) {
    throw WireError(WireErrorKind::kMalformedJson, e.what());
  }
}

namespace {

bool pid_alive(long pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

// Every control directory to search, opened and checked: one that fails the check ends the
// command with its UsageError (exit 2), before anything in any of them is read or removed.
std::vector<PrivateDir> open_dirs(const std::vector<fs::path>& paths) {
  std::vector<PrivateDir> dirs;
  for (const fs::path& p : paths) dirs.push_back(open_control_dir(p, /*create=*/false));
  return dirs;
}

// Registrations of one directory; the ones skipped are noted for stderr (they are not jobs, and
// cleanup leaves them alone: a person should look at them).
std::vector<Registration> registrations_of(const PrivateDir& d, std::string* err) {
  std::vector<std::string> skipped;
  std::vector<Registration> regs = read_registrations(d, &skipped);
  for (const std::string& s : skipped) *err += "ignored " + terminal_safe(s) + "\n";
  return regs;
}

std::string dirs_text(const std::vector<fs::path>& dirs) {
  if (dirs.empty()) return "no control directory exists yet";
  std::string s;
  for (const fs::path& d : dirs) s += (s.empty() ? "" : ", ") + d.string();
  return s;
}

// The job's state as `list` shows it, with its status when it answered.
Json probe_job(const Registration& r, int timeout_ms) {
  Json row = to_json(r);
  row["status"] = nullptr;
  if (r.host != this_host()) {
    row["state"] = "other-host";
    return row;
  }
  try {
    Json reply = request(r.socket.string(), "status", timeout_ms);
    row["state"] = reply.value("ok", false) ? "running" : "refused";
    if (reply.contains("status")) row["status"] = reply["status"];
  } catch (const SysErrorException&) {
    row["state"] = "stale";
  } catch (const WireError&) {
    row["state"] = pid_alive(r.pid) ? "not-responding" : "stale";
  }
  return row;
}

ControlOutcome do_list(const ControlArgs& a, const Environment& env) {
  ControlOutcome o;
  const auto dirs = control_dirs_to_search(env);
  Json jobs = Json::array();
  for (const PrivateDir& d : open_dirs(dirs))
    for (const Registration& r : registrations_of(d, &o.err))
      jobs.push_back(probe_job(r, std::min(a.timeout_ms, 2000)));
  if (a.json) {
    Json doc{{"schema_version", 1}, {"searched", Json::array()}, {"jobs", jobs}};
    for (const fs::path& d : dirs) doc["searched"].push_back(d.string());
    o.out = doc.dump(2) + "\n";
  } else if (jobs.empty()) {
    o.out = "no fabtrain jobs on this node (searched: " + terminal_safe(dirs_text(dirs)) + ")\n";
  } else {
    o.out = reports::text::render_job_list(jobs);
  }
  return o;
}

ControlOutcome do_job(const ControlArgs& a, const Environment& env) {
  ControlOutcome o;
  if (a.job.empty())
    throw UsageError("`fabtrain control " + a.command +
                     "` needs a JOB: `fabtrain control list` shows them");
  const auto dirs = control_dirs_to_search(env);
  std::vector<Registration> matches;
  std::set<std::string> names;
  for (const PrivateDir& d : open_dirs(dirs))
    for (const Registration& r : registrations_of(d, &o.err)) {
      names.insert(r.job);
      if (r.job == a.job || std::to_string(r.pid) == a.job) matches.push_back(r);
    }
  if (matches.empty()) {
    check_job_id(a.job);  // a value that can never be a job id is a usage error
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    o.exit_code = 1;
    o.err +=
        "no job '" + a.job + "' on this node (searched: " + terminal_safe(dirs_text(dirs)) + "); " +
        (known.empty() ? std::string("no jobs are registered") : "registered: " + known) + "\n";
    return o;
  }
  const Registration& r = matches.front();
  if (r.host != this_host()) {
    o.exit_code = 1;
    o.err += "job '" + r.job + "' was registered by host " + terminal_safe(r.host) +
             ", not this one (" + terminal_safe(this_host()) +
             "): run `fabtrain control` there (is FABTRAIN_CONTROL_DIR on a shared filesystem?)\n";
    return o;
  }
  Json reply;
  try {
    reply = request(r.socket.string(), a.command, a.timeout_ms);
  } catch (const SysErrorException& e) {
    o.exit_code = 1;
    o.err += "job '" + r.job + "' (pid " + std::to_string(r.pid) + ") is gone: its endpoint " +
             terminal_safe(r.socket.string()) + " is stale (" + terminal_safe(e.what()) +
             "); `fabtrain control cleanup` removes it\n";
    return o;
  } catch (const WireError& e) {
    o.exit_code = 1;
    o.err += "job '" + r.job + "' (pid " + std::to_string(r.pid) + ") did not answer within " +
             std::to_string(a.timeout_ms) + " ms: " + terminal_safe(e.what()) + "\n";
    return o;
  }
  if (a.json) o.out = reply.dump(2) + "\n";
  if (!reply.value("ok", false)) {
    o.exit_code = 1;
    const auto text = [&](const char* key, const char* otherwise) {
      return reply.contains(key) && reply[key].is_string()
                 ? terminal_safe(reply[key].get<std::string>())
                 : std::string(otherwise);
    };
    o.err += "job '" + r.job + "' refused '" + a.command + "': " + text("error", "?") + ": " +
             text("message", "") + "\n";
    return o;
  }
  if (a.json) return o;
  if (a.command == "status")
    o.out = r.job + ": " +
            reports::text::control_status_line(reply.value("status", Json::object())) + "\n";
  else
    o.out = r.job + ": " + a.command + " requested: " +
            (reply.contains("note") && reply["note"].is_string()
                 ? terminal_safe(reply["note"].get<std::string>())
                 : std::string()) +
            "\n";
  return o;
}

ControlOutcome do_cleanup(const ControlArgs& a, const Environment& env) {
  ControlOutcome o;
  Json removed = Json::array(), kept = Json::array();
  const std::string host = this_host();
  for (const PrivateDir& d : open_dirs(control_dirs_to_search(env))) {
    std::set<std::string> registered_sockets;
    for (const Registration& r : registrations_of(d, &o.err)) {
      const std::string socket_name = r.job + ".sock";
      registered_sockets.insert(socket_name);
      if (r.host != host) {
        kept.push_back(Json{{"job", r.job}, {"why", "registered by host " + r.host}});
        continue;
      }
      std::string why;
      if (!pid_alive(r.pid))
        why = "pid " + std::to_string(r.pid) + " is gone";
      else if (Liveness l = probe_socket(r.socket); l != Liveness::kAlive)
        why = l == Liveness::kMissing ? "its socket is missing" : "its socket refuses connections";
      if (why.empty()) {
        kept.push_back(Json{{"job", r.job}, {"why", "running"}});
        continue;
      }
      // Only <dir>/<job>.sock, only if it is a socket, through the checked directory's
      // descriptor: never a path the registration names.
      std::string refused;
      if (!remove_socket_at(d, socket_name, &refused) ||
          !remove_file_at(d, r.job + ".json", &refused)) {
        kept.push_back(Json{{"job", r.job}, {"why", refused}});
        o.err += "kept job '" + r.job + "': " + terminal_safe(refused) + "\n";
        continue;
      }
      removed.push_back(Json{{"job", r.job}, {"why", why}});
    }
    // Sockets without a registration (a job killed between bind and registering).
    for (const std::string& name : socket_names(d)) {
      if (registered_sockets.count(name)) continue;
      if (probe_socket(d.path / name) == Liveness::kAlive) continue;
      std::string refused;
      if (!remove_socket_at(d, name, &refused)) continue;
      removed.push_back(Json{{"job", fs::path(name).stem().string()},
                             {"why", "unregistered socket refuses connections"}});
    }
  }
  if (a.json) {
    o.out = Json{{"schema_version", 1}, {"removed", removed}, {"kept", kept}}.dump(2) + "\n";
    return o;
  }
  for (const Json& r : removed)
    o.out += "removed the stale endpoint of job '" + terminal_safe(r["job"].get<std::string>()) +
             "' (" + terminal_safe(r["why"].get<std::string>()) + ")\n";
  if (removed.empty()) o.out = "nothing to clean: no stale endpoints\n";
  return o;
}

}  // namespace

ControlOutcome run_control(const ControlArgs& args, const Environment& env) {
  try {
    if (args.timeout_ms <= 0)
      throw UsageError("--timeout-ms " + std::to_string(args.timeout_ms) + " must be positive");
    if (args.command == "list") return do_list(args, env);
    if (args.command == "cleanup") return do_cleanup(args, env);
    if (args.command == "status" || args.command == "stop" || args.command == "save" ||
        args.command == "abort")
      return do_job(args, env);
    throw UsageError("unknown control command '" + args.command +
                     "': expected list, status, stop, save, abort or cleanup");
  } catch (const UsageError& e) {
    return ControlOutcome{2, "", std::string(e.what()) + "\n"};
  } catch (const std::exception& e) {
    return ControlOutcome{3, "", std::string(e.what()) + "\n"};
  }
}

}  // namespace fabkit::trainer::control
