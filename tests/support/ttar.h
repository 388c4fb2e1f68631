// Unpacks a .ttar plain-text archive (prometheus/procfs's fixture format: blocks of `Path:`,
// `Lines: N` + N lines, `Directory:`, `SymlinkTo:`, `Mode:`, separated by `# ttar - - -` lines)
// into a directory, so real sysfs captures can serve as --sysroot trees in tests. Written by hand:
// no packaged library reads this format.
#pragma once

#include <filesystem>
#include <string>

namespace fabkit::testing {

// Extracts every entry whose path starts with strip_prefix (that prefix removed) under dest.
// Throws std::runtime_error naming the file and line on malformed input.
void unpack_ttar(const std::filesystem::path& ttar, const std::filesystem::path& dest,
                 const std::string& strip_prefix);

// A fresh, unique temporary directory removed on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& tag);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Writes text to path, creating parent directories.
void write_file(const std::filesystem::path& path, const std::string& text);

// Absolute path of tests/fixtures (the real-machine captures are under tests/fixtures/real).
std::filesystem::path project_fixtures();

}  // namespace fabkit::testing
