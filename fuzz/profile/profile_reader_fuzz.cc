// libFuzzer target: the cluster.json reader must turn any bytes into a Profile or a UsageError,
// never a crash, hang or other exception; and whatever it accepts must serialize and read back.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/errors.h"
#include "profile/profile_document.h"
#include "profile/profile_reader.h"
#include "profile/resolver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  fabkit::profile::Profile p;
  try {
    p = fabkit::profile::parse_profile(text, "fuzz.json");
  } catch (const fabkit::UsageError&) {
    return 0;
  }
  // Accepted: resolution works for every listed host and the profile survives a round trip.
  for (const auto& n : p.nodes) (void)fabkit::profile::resolve_settings(p, n.hostname);
  std::string again = fabkit::profile::serialize_profile(p);
  fabkit::profile::parse_profile(again, "fuzz-roundtrip.json");  // throws -> the fuzzer reports it
  return 0;
}
