#include "common/file_reader.h"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <system_error>

#include "common/root_open.h"

namespace fabkit {

Expected<std::string> read_text(const std::filesystem::path& p, size_t max_bytes) {
  if (auto tree = tree_holding(p)) return tree->read_text(p, max_bytes);
  std::ifstream in(p, std::ios::binary);
  if (!in) return SysError{"open", errno ? errno : ENOENT, p.string()};
  // Grown in steps rather than sized to max_bytes up front: the bound is often megabytes (a
  // pci.ids, a kernel log) and zero-filling it cost more than reading the file.
  std::string out;
  constexpr size_t kStep = 64 * 1024;
  while (out.size() < max_bytes) {
    const size_t at = out.size();
    out.resize(std::min(max_bytes, at + kStep));
    in.read(out.data() + at, static_cast<std::streamsize>(out.size() - at));
    if (in.bad()) return SysError{"read", errno ? errno : EIO, p.string()};
    out.resize(at + static_cast<size_t>(in.gcount()));
    if (in.eof()) break;
  }
  return out;
}

bool read_stream_capped(std::istream& in, size_t max_bytes, std::string* out,
                        const std::string& name) {
  constexpr size_t kChunk = 1 << 20;
  out->clear();
  while (in && out->size() < max_bytes) {
    // Grow by doubling but never past max_bytes: what is resident stays near what was read.
    if (out->capacity() - out->size() < kChunk)
      out->reserve(std::min(std::max(out->capacity() * 2, kChunk), max_bytes));
    const size_t room = std::min(kChunk, max_bytes - out->size());
    const size_t old = out->size();
    out->resize(old + room);
    in.read(out->data() + old, static_cast<std::streamsize>(room));
    out->resize(old + static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw SysErrorException({"read", errno ? errno : EIO, name});
  // One byte past the limit is enough to refuse; it is not kept.
  return !(out->size() == max_bytes && in && in.peek() != std::char_traits<char>::eof());
}

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::optional<std::string> read_line(const std::filesystem::path& p) {
  auto t = read_text(p, 64 * 1024);
  if (!ok(t)) return std::nullopt;
  const std::string& s = value(t);
  return trim(s.substr(0, s.find('\n')));
}

std::optional<int64_t> read_int(const std::filesystem::path& p) {
  auto l = read_line(p);
  if (!l || l->empty()) return std::nullopt;
  try {
    size_t used = 0;
    int64_t v = std::stoll(*l, &used, 0);
    if (used != l->size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<std::string> list_dir(const std::filesystem::path& p) {
  std::vector<std::string> names;
  if (auto tree = tree_holding(p)) {
    names = tree->list_dir(p).value_or(std::vector<std::string>{});
    std::sort(names.begin(), names.end());
    return names;
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(p, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> symlink_basename(const std::filesystem::path& p) {
  if (auto tree = tree_holding(p)) {
    auto target = tree->read_link(p);
    if (!target) return std::nullopt;
    return std::filesystem::path(*target).filename().string();
  }
  std::error_code ec;
  auto target = std::filesystem::read_symlink(p, ec);
  if (ec) return std::nullopt;
  return target.filename().string();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    auto pos = s.find(sep, start);
    out.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace fabkit
