#include "tests/support/ttar.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <stdexcept>
#include <string>

namespace fabkit::testing {
namespace {

bool take(const std::string& line, const std::string& key, std::string* rest) {
  if (line.compare(0, key.size(), key) != 0) return false;
  *rest = line.substr(key.size());
  return true;
}

}  // namespace

void unpack_ttar(const std::filesystem::path& ttar, const std::filesystem::path& dest,
                 const std::string& strip_prefix) {
  std::ifstream in(ttar);
  if (!in) throw std::runtime_error("ttar: cannot open " + ttar.string());
  auto target_of = [&](const std::string& p) -> std::filesystem::path {
    if (p.compare(0, strip_prefix.size(), strip_prefix) != 0) return {};
    std::string rel = p.substr(strip_prefix.size());
    while (!rel.empty() && rel[0] == '/') rel.erase(0, 1);
    return dest / rel;
  };
  std::string line, rest, current;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (take(line, "Directory: ", &rest)) {
      auto t = target_of(rest);
      if (!t.empty()) std::filesystem::create_directories(t);
    } else if (take(line, "Path: ", &rest)) {
      current = rest;
    } else if (take(line, "Lines: ", &rest)) {
      size_t n = 0;
      try {
        n = std::stoul(rest);
      } catch (const std::exception&) {
        throw std::runtime_error(ttar.string() + ":" + std::to_string(lineno) + ": bad Lines: " + rest);
      }
      std::string body;
      for (size_t i = 0; i < n; ++i) {
        if (!std::getline(in, line))
          throw std::runtime_error(ttar.string() + ": truncated file body of " + current);
        ++lineno;
        // ttar marks a file without a final newline by suffixing its last line with "EOF"
        // (procfs's own node_guid capture uses it), and encodes NUL bytes as "NULLBYTE".
        bool last = i + 1 == n;
        if (last && line.size() >= 3 && line.compare(line.size() - 3, 3, "EOF") == 0) {
          body += line.substr(0, line.size() - 3);
        } else {
          body += line + "\n";
        }
      }
      auto t = target_of(current);
      if (!t.empty()) {
        std::filesystem::create_directories(t.parent_path());
        std::ofstream(t, std::ios::binary) << body;
      }
    } else if (take(line, "SymlinkTo: ", &rest)) {
      auto t = target_of(current);
      if (!t.empty()) {
        std::filesystem::create_directories(t.parent_path());
        std::error_code ec;
        std::filesystem::remove(t, ec);
        std::filesystem::create_symlink(rest, t);
      }
    }
  }
}

TempDir::TempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("fabkit_" + tag + "_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::filesystem::path project_fixtures() { return FABKIT_PROJECT_FIXTURES; }

}  // namespace fabkit::testing
