// Everything that can go wrong on a control or data connection, by name. The names are stable:
// they appear in agent error frames, pair findings and docs/pair.md.
#pragma once

#include <stdexcept>
#include <string>

namespace fabkit::wire {

enum class WireErrorKind {
  kTruncated,       // the peer closed mid-frame
  kOversized,       // the length prefix exceeds the cap; rejected before allocating
  kBadType,         // unknown frame type byte
  kMalformedJson,   // payload is not JSON
  kBadMessage,      // JSON, but a required field is missing or has the wrong type/range
  kTimeout,         // a read/write/connect deadline passed
  kClosed,          // the peer closed between frames
  kBadToken,        // the connecting side could not prove the session token
  kImpostor,        // the side we connected to could not prove the session token
  kRejected,        // the peer authenticated but refused (its own code is in the message)
  kVersionMismatch, // protocol version differs
  kIo,              // a socket call failed (errno in the message)
};

const char* to_string(WireErrorKind k);  // "wire.truncated", ...

class WireError : public std::runtime_error {
 public:
  WireError(WireErrorKind kind, const std::string& message)
      : std::runtime_error(std::string(to_string(kind)) + ": " + message), kind_(kind) {}
  WireErrorKind kind() const { return kind_; }

 private:
  WireErrorKind kind_;
};

}  // namespace fabkit::wire
