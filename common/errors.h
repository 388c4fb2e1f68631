// Three different things go wrong, and they stay apart (docs/architecture.md, "Exit codes"):
//  - the tool failed: a syscall or verbs call failed -> SysError (call, errno, object);
//  - the fabric is unhealthy -> Findings, never exceptions;
//  - a programmer invariant broke -> FABKIT_ENFORCE -> InternalError (exit 3).
// UsageError covers bad flags, files and env given by the user (exit 2).
#pragma once

#include <stdexcept>
#include <string>

namespace fabkit {

struct SysError {
  std::string call;    // "open", "ibv_query_port"
  int err = 0;         // errno (or the verbs return code, which is an errno value)
  std::string object;  // "/sys/class/infiniband/mlx5_0/ports/1/state"
  std::string to_string() const;  // "open(/sys/...): No such file or directory (errno 2)"
};

class SysErrorException : public std::runtime_error {
 public:
  explicit SysErrorException(SysError e) : std::runtime_error(e.to_string()), error_(std::move(e)) {}
  const SysError& error() const { return error_; }

 private:
  SysError error_;
};

// Bad input from the user: flags, files, environment. The message names the file, field or value
// and the fix.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void enforce_failed(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace fabkit

#define FABKIT_ENFORCE(cond, msg)                                          \
  do {                                                                     \
    if (!(cond)) ::fabkit::enforce_failed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
