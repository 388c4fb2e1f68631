// What NcclEnv and fabtrain's checkpoints do first: make a folder, remove a file that may not
// exist, remove a tree. Bound to torch 2.11's exported copy, the first call crashed.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--check-only") == 0) return 0;
  if (argc < 2) return 2;
  const fs::path dir = fs::path(argv[1]) / "nccl";
  fs::create_directories(dir);
  fs::remove((dir / "rank-3.log").string());
  fs::remove_all(argv[1]);
  std::printf("ok\n");
  return fs::exists(argv[1]) ? 1 : 0;
}
