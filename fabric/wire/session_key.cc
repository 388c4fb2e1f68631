#include "fabric/wire/session_key.h"

#include <openssl/evp.h>

#include <mutex>
#include <utility>
#include <vector>

#include "fabric/wire/wire_error.h"

namespace fabkit::wire {
namespace {

// Both sides must derive the same key from the token alone, so the salt is fixed: it separates
// fabkit's keys from any other use of the same passphrase, not one run from another.
constexpr char kScryptSalt[] = "fabkit session token key v1";
// Processes see one token each (a test binary a few): a short list, oldest dropped first.
constexpr size_t kCachedKeys = 8;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string derive(const std::string& token) {
  std::string key(kSessionKeyBytes, '\0');
  if (is_generated_token_form(token)) {
    for (size_t i = 0; i < kSessionKeyBytes; ++i)
      key[i] = static_cast<char>(hex_digit(token[2 * i]) << 4 | hex_digit(token[2 * i + 1]));
    return key;
  }
  // maxmem: what N and r need (128·r·N) plus scrypt's small extras; OpenSSL's default cap is 32
  // MiB.
  const uint64_t maxmem = 128 * kScryptR * kScryptN + (uint64_t{1} << 20);
  if (EVP_PBE_scrypt(token.data(), token.size(),
                     reinterpret_cast<const unsigned char*>(kScryptSalt), sizeof kScryptSalt - 1,
                     kScryptN, kScryptR, kScryptP, maxmem,
                     reinterpret_cast<unsigned char*>(key.data()), key.size()) != 1)
    throw WireError(WireErrorKind::kIo, "scrypt failed to derive the session key (out of memory?)");
  return key;
}

}  // namespace

bool is_generated_token_form(const std::string& token) {
  if (token.size() != 2 * kSessionKeyBytes) return false;
  for (char c : token)
    if (hex_digit(c) < 0) return false;
  return true;
}

std::string session_key(const std::string& token) {
  static std::mutex mu;
  static std::vector<std::pair<std::string, std::string>> cache;  // token, key
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [t, k] : cache)
      if (t == token) return k;
  }
  std::string key = derive(token);  // outside the lock: a slow derivation blocks no other token
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= kCachedKeys) cache.erase(cache.begin());
  cache.emplace_back(token, key);
  return key;
}

}  // namespace fabkit::wire
