// Linked like fabkit's binaries were before the fix (libtorch ahead of libstdc++ in NEEDED): the
// binding check must report its std::filesystem references as bound into a torch library. main
// never runs in the check (LD_BIND_NOW binds everything before main; --check-only exits at once).
#include <cstring>
#include <filesystem>

#include <torch/torch.h>

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--check-only") == 0) return 0;
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::temp_directory_path() / "fabkit-canary-none", ec);
  return torch::ones({1}).item<float>() == 1.0f ? 0 : 1;
}
