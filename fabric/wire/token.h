// The session token: 32 random bytes from the kernel, hex-encoded. The controller makes one per
// run and hands it to the agents on stdin (or FABKIT_SESSION_TOKEN), never on a command line that
// other users can read in /proc/*/cmdline. It is never sent on a socket: connections prove
// knowledge of it with handshake.h, keyed by session_key.h.
#pragma once

#include <string>

namespace fabkit::wire {

inline constexpr size_t kTokenHexChars = 64;
// No token shorter than this is accepted at all.
inline constexpr size_t kMinTokenChars = 16;
// A token that is not 64 hex digits is a passphrase someone chose (FABKIT_SESSION_TOKEN set by
// hand). Whoever an agent or controller connects to receives a proof made with it, and can test
// guesses against that proof offline, one scrypt each (session_key.h). The floor: at least 24
// characters and at least 10 different ones, and not a shorter string repeated. (A short
// passphrase made of words fell to a 3-word guess list; 24 characters of even lowercase letters
// is ~110 bits if random, and the floor refuses the short and the repetitive ones outright.)
inline constexpr size_t kMinPassphraseChars = 24;
inline constexpr size_t kMinDistinctChars = 10;
// The name of the refusal, in the message the agent exits with (exit 2).
inline constexpr char kWeakTokenError[] = "wire.weak_token";

std::string generate_token();  // getrandom(); throws SysErrorException when it fails
// Empty when acceptable, else why not ("is 12 characters; at least 16 are needed", ...). Applies
// the passphrase floor above to every token that is not of the generated form, and refuses a
// generated-form token that is visibly not random (fewer than 10 different digits, a repetition).
std::string token_problem(const std::string& token);
// The fix every refusal names: how to make a token of the generated form.
inline constexpr char kTokenFix[] =
    "use a random token of 64 hex digits, e.g. FABKIT_SESSION_TOKEN=$(openssl rand -hex 32), or "
    "let "
    "fabcheck pair make one (it does, for every run)";

}  // namespace fabkit::wire
