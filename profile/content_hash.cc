#include "profile/content_hash.h"

#include <openssl/evp.h>

#include "common/errors.h"

namespace fabkit::profile {

std::string content_hash(const Json& document) {
  // nlohmann::json (not ordered_json) keeps object members in a std::map: sorted keys, so the
  // hash does not depend on member order in the file. Converted value by value, not through text.
  nlohmann::json canonical(document);
  if (canonical.is_object()) canonical.erase("provenance");
  std::string bytes = canonical.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr) != 1)
    throw InternalError("EVP_Digest(sha256) failed");
  static const char* kHex = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

}  // namespace fabkit::profile
