// Fuzzes the safetensors header parser (trainer/io/safetensors_header.h) on whole file images:
// every input must either parse into entries that lie inside the buffer, or throw UsageError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/errors.h"
#include "trainer/io/safetensors_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabkit::trainer;
  if (size < 8) return 0;
  try {
    uint64_t n = parse_safetensors_prefix(data, size, "fuzz");
    SafetensorsHeader h =
        parse_safetensors_header(std::string(reinterpret_cast<const char*>(data + 8), n), size, "fuzz");
    for (const auto& e : h.tensors)
      if (e.begin > e.end || h.data_start + e.end > size) __builtin_trap();
  } catch (const fabkit::UsageError&) {
  }
  return 0;
}
