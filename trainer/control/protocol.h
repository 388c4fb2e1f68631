// The control protocol: one JSON object per line each way, one request per connection.
//   -> {"command": "status"}          (or "stop", "save", "abort"; "protocol": 1 optional)
//   <- {"ok": true, "protocol": 1, "job": "run1", "command": "status", "status": {...}}
//   <- {"ok": true, ..., "command": "stop", "pending": "stop"}
//   <- {"ok": false, "protocol": 1, "error": "control.unknown_command", "message": "..."}
// Error names are stable (docs/fabtrain.md lists them). Lines are capped at kMaxLineBytes so a
// client cannot make the server buffer without bound.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "common/json.h"

namespace fabkit::trainer::control {

inline constexpr size_t kMaxLineBytes = 4096;

namespace errc {
inline constexpr const char* kMalformedJson = "control.malformed_json";
inline constexpr const char* kBadRequest = "control.bad_request";
inline constexpr const char* kUnknownCommand = "control.unknown_command";
inline constexpr const char* kLineTooLong = "control.line_too_long";
inline constexpr const char* kForbidden = "control.forbidden";
inline constexpr const char* kBusy = "control.busy";
inline constexpr const char* kTimeout = "control.timeout";
inline constexpr const char* kVersionMismatch = "control.version_mismatch";
inline constexpr const char* kInternal = "control.internal";
}  // namespace errc

// A request the server refuses, by name.
class ProtocolError : public std::runtime_error {
 public:
  ProtocolError(const char* code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  const char* code() const { return code_; }

 private:
  const char* code_;
};

// The command of one request line (without its newline). Throws ProtocolError.
std::string parse_request(const std::string& line);

// Reply lines, newline included.
std::string ok_reply(const std::string& job, const std::string& command, Json body);
std::string error_reply(const char* code, const std::string& message);

}  // namespace fabkit::trainer::control
