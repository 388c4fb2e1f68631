// What an NCCL net plugin (or libnccl itself) says about itself in its ELF file, read without
// loading it: root must not run a library's constructors to inspect it. The dynamic symbol table
// names the plugin API versions it offers (`ncclNetPlugin_vN`, `ncclCollNetPlugin_vN`: the symbols
// NCCL dlsym()s, src/plugin/net/net_vN.cc), and its .rodata holds the version text it logs.
//
// Parsed by hand rather than with elfutils' libelf: fabcheck must build on the GPU machines, which
// have no Debian packages (docs/gpu-node.md), and the part needed (the ELF header, the section
// headers, .dynsym/.dynstr and one section's bytes) is small enough to bounds-check line by line
// and to fuzz (fuzz/nccl_net_fuzz.cc). Every offset and size read from the file is checked
// against the file's size before use; a truncated or hostile file is an `error`, never a crash.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fabkit::probes {

// Reads `size` bytes at `offset` into `out`; false when the file has fewer.
using ElfReadAt = std::function<bool(uint64_t offset, uint64_t size, std::string* out)>;

struct ElfLibrary {
  std::string machine;                       // "x86_64", "aarch64", "machine 40" (unknown ones)
  std::vector<int> net_api_versions;         // ncclNetPlugin_vN defined here, ascending
  std::vector<int> collnet_api_versions;     // ncclCollNetPlugin_vN defined here, ascending
  std::vector<std::string> rodata_versions;  // see find_version_texts: what .rodata says
  std::optional<std::string> error;  // not a readable ELF shared object: what is wrong, and where
};

// The limits a hostile file cannot push us past (an aws-ofi-nccl 1.x .so has ~2,000 dynamic
// symbols and ~200 KiB of .rodata; libnccl 2.28's .rodata is 217 KiB).
inline constexpr uint64_t kMaxElfSections = 4096;
inline constexpr uint64_t kMaxElfTableBytes = 16u << 20;  // .dynsym, .dynstr, .shstrtab
inline constexpr uint64_t kMaxRodataBytes = 64u << 20;

// file_size: the file's size; read_at: its bytes. markers: the prefixes find_version_texts looks
// for in .rodata.
ElfLibrary read_elf_library(uint64_t file_size, const ElfReadAt& read_at,
                            const std::vector<std::string>& markers);
// The same over bytes in memory (tests, the fuzz target).
ElfLibrary read_elf_library_bytes(const std::string& bytes,
                                  const std::vector<std::string>& markers);

// Each place `marker` occurs in text followed by a version ("1.21.1", "1.7.4-aws",
// "2.28.9+cuda13.0"): marker + the version, cut at the first byte that is not [0-9A-Za-z.+_-].
// Only a marker followed directly by a digit counts, so a URL or a message that merely names the
// package is no version. Distinct results, in file order, at most 8.
std::vector<std::string> find_version_texts(const std::string& text,
                                            const std::vector<std::string>& markers);

// The name `e_machine` stands for (x86_64, aarch64, ...), and this build's own.
std::string elf_machine_name(uint16_t e_machine);
std::string host_elf_machine();

}  // namespace fabkit::probes
