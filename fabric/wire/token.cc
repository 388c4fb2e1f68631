#include "fabric/wire/token.h"

#include <cerrno>
#include <set>

#include <sys/random.h>

#include "common/errors.h"
#include "fabric/wire/session_key.h"

namespace fabkit::wire {

std::string generate_token() {
  unsigned char raw[kTokenHexChars / 2];
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t r = ::getrandom(raw + got, sizeof raw - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw SysErrorException(SysError{"getrandom", errno, "session token"});
    }
    got += static_cast<size_t>(r);
  }
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

namespace {

// The shortest period p (p < n, n % p == 0) such that the string is one piece repeated, or 0.
size_t repetition_period(const std::string& s) {
  for (size_t p = 1; p <= s.size() / 2; ++p) {
    if (s.size() % p != 0) continue;
    bool same = true;
    for (size_t i = p; same && i < s.size(); ++i) same = s[i] == s[i - p];
    if (same) return p;
  }
  return 0;
}

}  // namespace

std::string token_problem(const std::string& token) {
  if (token.size() < kMinTokenChars)
    return "is " + std::to_string(token.size()) + " characters; at least " +
           std::to_string(kMinTokenChars) + " are needed";
  if (token.size() > 1024) return "is longer than 1024 characters";
  for (char c : token)
    if (c <= ' ' || c > '~') return "contains a space or a non-printable character";
  const size_t distinct = std::set<char>(token.begin(), token.end()).size();
  const size_t period = repetition_period(token);
  if (is_generated_token_form(token)) {
    // 64 random hex digits use fewer than 10 different ones with probability ~1e-12.
    if (distinct < kMinDistinctChars || period != 0)
      return "has the form of a generated token (64 hex digits) but is not random (" +
             (period != 0 ? "the same " + std::to_string(period) + " digits repeated"
                          : "only " + std::to_string(distinct) + " different digits") +
             ")";
    return {};
  }
  if (token.size() < kMinPassphraseChars)
    return "is a passphrase of " + std::to_string(token.size()) +
           " characters; a token that is not 64 hex "
           "digits needs at least " +
           std::to_string(kMinPassphraseChars);
  if (distinct < kMinDistinctChars)
    return "is a passphrase of only " + std::to_string(distinct) +
           " different characters; at least " + std::to_string(kMinDistinctChars) + " are needed";
  if (period != 0)
    return "is a passphrase made of one " + std::to_string(period) + "-character piece repeated";
  return {};
}

}  // namespace fabkit::wire
