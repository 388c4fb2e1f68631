// Byte counts as people read them in messages and tables: "8 MiB", "1.5 GiB".
#pragma once

#include <cstdint>
#include <string>

namespace fabkit {

// Binary units up to TiB; whole values without decimals, others with one.
std::string human_bytes(uint64_t bytes);

}  // namespace fabkit
