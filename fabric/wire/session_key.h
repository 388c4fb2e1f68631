// The key every handshake proof is made with (handshake.h), derived once per token per process.
// A token of the form generate_token() makes (64 lowercase hex digits, 256 random bits) is its own
// key: nothing to stretch, so the generated tokens every run uses stay fast. Any other token is a
// passphrase someone chose; it goes through scrypt, so each guess an attacker tests against a
// captured proof costs what one derivation costs here (~0.2 s and 64 MiB), not one HMAC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fabkit::wire {

inline constexpr size_t kSessionKeyBytes = 32;
// scrypt's cost for passphrase tokens: N = 2^16, r = 8, p = 1 (128·r·N = 64 MiB of memory).
// Measured ~0.2 s on the 2-core development machine; paid once per token by each process.
inline constexpr uint64_t kScryptN = uint64_t{1} << 16;
inline constexpr uint64_t kScryptR = 8;
inline constexpr uint64_t kScryptP = 1;

// True for exactly 64 lowercase hex digits: the form generate_token() makes.
bool is_generated_token_form(const std::string& token);

// The 32-byte HMAC key for `token`: the decoded bytes of a generated-form token, else
// scrypt(token, a fixed protocol salt). Cached per process (a handful of tokens), so only the
// first proof a process makes with a passphrase pays for the derivation. Throws WireError kIo
// when OpenSSL fails.
std::string session_key(const std::string& token);

}  // namespace fabkit::wire
