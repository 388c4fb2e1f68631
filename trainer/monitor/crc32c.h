// CRC-32C (Castagnoli), as TFRecord frames need it. The CRC itself comes from Intel's ISA-L
// (Debian libisal-dev: SSE4.2/PCLMUL on x86, CRC instructions on arm64, a table otherwise), so
// the checksum every event record carries is not code of ours.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fabkit::trainer::monitor {

// The standard CRC-32C (reflected, init and final xor 0xFFFFFFFF): "123456789" -> 0xE3069283.
uint32_t crc32c(const void* data, size_t size);

// TFRecord's masked form: a CRC stored next to the data it covers, when that data may itself
// contain CRCs, is rotated and offset so that CRCs of CRCs do not degenerate (TensorFlow's
// lib/hash/crc32c.h Mask()).
inline uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

inline uint32_t masked_crc32c(const void* data, size_t size) {
  return mask_crc32c(crc32c(data, size));
}

}  // namespace fabkit::trainer::monitor
