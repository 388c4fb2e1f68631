#include "fabric/wire/token.h"

#include <cerrno>

#include <sys/random.h>

#include "common/errors.h"

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

std::string token_problem(const std::string& token) {
  if (token.size() < kMinTokenChars)
    return "is " + std::to_string(token.size()) + " characters; at least " +
           std::to_string(kMinTokenChars) + " are needed";
  if (token.size() > 1024) return "is longer than 1024 characters";
  for (char c : token)
    if (c <= ' ' || c > '~') return "contains a space or a non-printable character";
  return {};
}

}  // namespace fabkit::wire
