// The session token: 32 random bytes from the kernel, hex-encoded. The controller makes one per
// run and hands it to the agents on stdin (or FABKIT_SESSION_TOKEN), never on a command line that
// other users can read in /proc/*/cmdline. It is never sent on a socket: connections prove
// knowledge of it with handshake.h.
#pragma once

#include <string>

namespace fabkit::wire {

inline constexpr size_t kTokenHexChars = 64;
// Shorter tokens are refused: 16 hex chars = 64 bits is the least we accept from a user who sets
// FABKIT_SESSION_TOKEN by hand.
inline constexpr size_t kMinTokenChars = 16;

std::string generate_token();  // getrandom(); throws SysErrorException when it fails
// Empty when acceptable, else why not ("shorter than 16 characters", "contains a space", ...).
std::string token_problem(const std::string& token);

}  // namespace fabkit::wire
