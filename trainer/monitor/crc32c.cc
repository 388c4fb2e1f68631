#include "trainer/monitor/crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace fabkit::trainer::monitor {

uint32_t crc32c(const void* data, size_t size) {
  // ISA-L's crc32_iscsi takes the running register as init and applies no final xor (checked:
  // crc32_iscsi("123456789", 9, ~0) ^ ~0 == 0xE3069283, the CRC-32C check value). Its length is
  // an int: feed buffers past 2 GiB in pieces, carrying the register.
  const auto* p = static_cast<const unsigned char*>(data);
  unsigned int reg = 0xffffffffu;
  while (size > 0) {
    const size_t chunk = size > static_cast<size_t>(INT_MAX) ? static_cast<size_t>(INT_MAX) : size;
    reg = crc32_iscsi(const_cast<unsigned char*>(p), static_cast<int>(chunk), reg);
    p += chunk;
    size -= chunk;
  }
  return reg ^ 0xffffffffu;
}

}  // namespace fabkit::trainer::monitor
