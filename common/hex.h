// Lowercase hex for bytes that travel inside text (NCCL unique ids in the runner's line protocol,
// Gloo store values inside JSON frames).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fabkit {

std::string hex_encode(const void* data, size_t len);
// False (and *out unspecified) for an odd length or a non-hex digit; either case is accepted.
bool hex_decode(const std::string& hex, std::vector<uint8_t>* out);

}  // namespace fabkit
