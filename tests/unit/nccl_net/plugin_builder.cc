#include "tests/unit/nccl_net/plugin_builder.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fabkit::testing {

void build_fake_library(const FakeLibrary& lib, const std::filesystem::path& out) {
  std::filesystem::create_directories(out.parent_path());
  std::ostringstream c;
  // The plugin tables are data symbols in the real plugins too (a struct of function pointers).
  for (int v : lib.net_versions) c << "int ncclNetPlugin_v" << v << "[8] = {" << v << "};\n";
  for (int v : lib.collnet_versions)
    c << "int ncclCollNetPlugin_v" << v << "[8] = {" << v << "};\n";
  for (int v : lib.imported_versions) c << "extern int ncclNetPlugin_v" << v << "[8];\n";
  c << "int fake_uses(void) { return 0";
  for (int v : lib.imported_versions) c << " + ncclNetPlugin_v" << v << "[0]";
  c << "; }\n";
  if (!lib.rodata_text.empty()) {
    c << "const char fake_version_text[] = \"";
    for (char ch : lib.rodata_text) {
      if (ch == '"' || ch == '\\') c << '\\';
      c << ch;
    }
    c << "\";\nconst char* fake_version(void) { return fake_version_text; }\n";
  }
  std::filesystem::path src = out.string() + ".c";
  {
    std::ofstream f(src);
    f << c.str();
  }
  std::string cmd = std::string(FABKIT_TEST_CC) + " -shared -fPIC -O1 -o '" + out.string() + "' '" +
                    src.string() + "'";
  int rc = std::system(cmd.c_str());
  std::filesystem::remove(src);
  if (rc != 0) throw std::runtime_error("'" + cmd + "' exited with " + std::to_string(rc));
}

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << bytes;
}

}  // namespace fabkit::testing
