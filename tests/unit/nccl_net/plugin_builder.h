// Small shared objects shaped like NCCL net plugins (and like libnccl), compiled at test time so
// no binary is committed: each defines the ncclNetPlugin_vN symbols asked for and keeps a version
// text in .rodata, as the real plugins do.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fabkit::testing {

struct FakeLibrary {
  std::vector<int> net_versions;       // ncclNetPlugin_vN defined
  std::vector<int> collnet_versions;   // ncclCollNetPlugin_vN defined
  std::vector<int> imported_versions;  // ncclNetPlugin_vN referenced but not defined
  std::string rodata_text;             // e.g. "NET/OFI Initializing aws-ofi-nccl 1.9.1-aws"
};

// Compiles `lib` into `out` (a shared object); throws std::runtime_error with the compiler's exit
// status when it fails.
void build_fake_library(const FakeLibrary& lib, const std::filesystem::path& out);
std::string read_bytes(const std::filesystem::path& p);
void write_bytes(const std::filesystem::path& p, const std::string& bytes);

}  // namespace fabkit::testing
