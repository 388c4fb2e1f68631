// The client side of `fabtrain control`: list | status JOB | stop JOB | save JOB | abort JOB |
// cleanup. A function from arguments to an exit code and the text to print, so tests run it
// directly and trainer/app/control_command.cc only binds flags.
//
// Exit codes: 0 done; 1 the job is not there, not responding, or refused the request (the error
// name is printed); 2 usage (a job id that cannot be one; a control directory that fails the
// ownership/permission check of common/private_dir.h); 3 internal.
#pragma once

#include <string>

#include "common/environment.h"
#include "common/json.h"

namespace fabkit::trainer::control {

struct ControlArgs {
  std::string command;    // "list", "status", "stop", "save", "abort", "cleanup"
  std::string job;        // job id (or the job's pid) for status/stop/save/abort
  bool json = false;      // one JSON document on stdout instead of text
  int timeout_ms = 5000;  // per job contacted: connect, request, reply
};

struct ControlOutcome {
  int exit_code = 0;
  std::string out;  // for stdout
  std::string err;  // for stderr
};

ControlOutcome run_control(const ControlArgs& args, const Environment& env);

// One request to one socket; returns the reply object (ok or not). Throws wire::WireError
// (kTimeout, kClosed, ...) or SysErrorException {"connect", errno, socket}.
Json request(const std::string& socket_path, const std::string& command, int timeout_ms);

}  // namespace fabkit::trainer::control
