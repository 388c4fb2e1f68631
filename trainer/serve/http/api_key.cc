#include "trainer/serve/http/api_key.h"

#include <sys/stat.h>

#include "common/errors.h"
#include "common/regular_file.h"

namespace fabkit::serve {

std::string load_api_key(const std::filesystem::path& file) {
  const std::string shown = "--api-key-file " + file.string();
  UniqueFd fd = open_regular_file(file, shown);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) throw UsageError(shown + ": cannot stat");
  if ((st.st_mode & (S_IROTH | S_IWOTH)) != 0) {
    throw UsageError(shown + ": other users can read or write it; run chmod 600 " + file.string());
  }
  // A key is a short token; a large file is a mistake (the wrong path), not a key.
  std::string key = read_all_capped(fd.get(), 4096, shown, "an API key is a short token");
  while (!key.empty() &&
         (key.back() == '\n' || key.back() == '\r' || key.back() == ' ' || key.back() == '\t')) {
    key.pop_back();
  }
  if (key.empty()) throw UsageError(shown + ": the file is empty; write the key into it");
  // The key goes into an HTTP header: a second line or a control byte would break the header
  // (or smuggle another one), so it is refused here rather than sent.
  for (unsigned char c : key) {
    if (c == '\n' || c == '\r')
      throw UsageError(shown + ": the file holds more than one line; the key is one line");
    if (c < 0x20 || c == 0x7f)
      throw UsageError(shown + ": the key holds a control character; it must be printable text");
  }
  return key;
}

bool bearer_matches(const std::string& authorization, const std::string& key) {
  static const std::string kPrefix = "Bearer ";
  if (authorization.compare(0, kPrefix.size(), kPrefix) != 0) return false;
  const size_t given_size = authorization.size() - kPrefix.size();
  // Every byte of the key is compared whatever the given length, so the time depends only on
  // the key's length, which is not secret enough to matter.
  unsigned char diff = given_size == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i) {
    unsigned char given =
        i < given_size ? static_cast<unsigned char>(authorization[kPrefix.size() + i]) : 0;
    diff |= given ^ static_cast<unsigned char>(key[i]);
  }
  return diff == 0;
}

}  // namespace fabkit::serve
