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

bool constant_time_equal(const std::string& a, const std::string& b) {
  // The length is not secret (tokens are fixed-size); the content is.
  size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
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
