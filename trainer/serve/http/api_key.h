// --api-key-file: the bearer token clients must send (Authorization: Bearer <key>). The server
// (`fabtrain serve`) and the client (`fabtrain chat`) read the file the same way
// (library fabkit_serve_api_key).
#pragma once

#include <filesystem>
#include <string>

namespace fabkit::serve {

// The key is the file's content less trailing whitespace. The file must be a regular file that
// other users cannot read or write (a key others can read is no secret; one they can write lets
// them choose it): UsageError naming the file and the fix (chmod 600) otherwise, and for an empty
// key or one of more than one line or with control characters.
std::string load_api_key(const std::filesystem::path& file);

// True when the Authorization header value is "Bearer <key>". The comparison takes the same time
// wherever the first differing byte is, so response timing does not reveal the key's prefix.
bool bearer_matches(const std::string& authorization, const std::string& key);

}  // namespace fabkit::serve
