// Any bytes as a net plugin's (or libnccl's) ELF file, and as ld.so.conf or NCCL_NET_PLUGIN text:
// a value with a named error, never a crash, an over-read or an allocation the file asked for.
#include <cstdint>
#include <string>

#include "probes/nccl_net/nccl_net_facts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto lib = fabkit::probes::read_elf_library_bytes(bytes, fabkit::probes::version_markers());
  fabkit::probes::LibraryFile f;
  f.elf = lib;
  fabkit::probes::classify_library(f);
  fabkit::probes::parse_ld_so_conf(bytes);
  fabkit::probes::plugin_names_to_try(bytes);
  return 0;
}
