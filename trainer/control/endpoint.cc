#include "trainer/control/endpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/errors.h"
#include "common/json_read.h"

namespace fabkit::trainer::control {
namespace fs = std::filesystem;

namespace {

bool is_own_dir(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid();
}

// XDG_RUNTIME_DIR/fabtrain when XDG_RUNTIME_DIR is usable (see endpoint.h), else nothing.
std::optional<fs::path> xdg_control_dir(const Environment& env) {
  auto x = env.get("XDG_RUNTIME_DIR");
  if (!x || x->empty() || !is_own_dir(*x)) return std::nullopt;
  return fs::path(*x) / "fabtrain";
}

fs::path tmp_control_dir() {
  return fs::path("/tmp") / ("fabtrain-" + std::to_string(::geteuid()));
}

}  // namespace

fs::path control_dir_for(const Environment& env) {
  if (auto d = env.get("FABTRAIN_CONTROL_DIR"); d && !d->empty()) return fs::path(*d);
  if (auto x = xdg_control_dir(env)) return *x;
  return tmp_control_dir();
}

std::vector<fs::path> control_dirs_to_search(const Environment& env) {
  std::vector<fs::path> out;
  std::vector<std::pair<dev_t, ino_t>> seen;
  auto add = [&](fs::path p) {
    p = p.lexically_normal();
    if (p.filename().empty() && p != p.root_path()) p = p.parent_path();  // "ctl/": lstat "ctl"
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return;  // absent: no job registered there
    if (std::find(seen.begin(), seen.end(), std::make_pair(st.st_dev, st.st_ino)) != seen.end())
      return;
    seen.emplace_back(st.st_dev, st.st_ino);
    out.push_back(p);
  };
  // An explicit directory is the only one: the user (or a test) chose where jobs register, and
  // jobs elsewhere on the node (other users' shells, other test runs) are not theirs to list.
  if (auto d = env.get("FABTRAIN_CONTROL_DIR"); d && !d->empty()) {
    add(*d);
    return out;
  }
  // Where a job of this user would have registered: XDG's only when it is this user's.
  if (auto x = xdg_control_dir(env)) add(*x);
  add(tmp_control_dir());
  return out;
}

PrivateDir open_control_dir(const fs::path& dir, bool create) {
  PrivateDirOptions o;
  o.what = "control directory";
  o.alternative = "set FABTRAIN_CONTROL_DIR to a directory of your own";
  o.create = create;
  return open_private_dir(dir, o);
}

void check_job_id(const std::string& job) {
  const bool ok_chars = std::all_of(job.begin(), job.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
  if (job.empty() || job.size() > 64 || !ok_chars || job[0] == '.')
    throw UsageError("job id '" + job +
                     "' is not usable as a file name: use 1-64 characters of A-Z a-z 0-9 . _ - "
                     "(not starting with '.')");
}

std::string job_id_from_output_dir(const fs::path& output_dir) {
  fs::path p = output_dir;
  if (p.filename().empty()) p = p.parent_path();  // "out/" -> "out"
  std::string name = fs::absolute(p).lexically_normal().filename().string();
  for (char& c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (!keep) c = '-';
  }
  while (!name.empty() && name[0] == '.') name.erase(0, 1);
  if (name.size() > 64) name.resize(64);
  return name.empty() ? "fabtrain" : name;
}

Json to_json(const Registration& r) {
  return Json{{"protocol", kProtocolVersion},
              {"job", r.job},
              {"pid", r.pid},
              {"host", r.host},
              {"socket", r.socket.string()},
              {"output_dir", r.output_dir.string()},
              {"started_unix_s", r.started_unix_s}};
}

namespace {

// The whole of a small regular file in dir, never following a symlink; nullopt with *why.
std::optional<std::string> read_small_file_at(const PrivateDir& dir, const std::string& name,
                                              std::string* why) {
  UniqueFd fd(::openat(dir.fd.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    *why = std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    return std::nullopt;
  }
  if (static_cast<size_t>(st.st_size) > kMaxRegistrationBytes) {
    *why = "larger than " + std::to_string(kMaxRegistrationBytes) + " bytes";
    return std::nullopt;
  }
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), &text[got], text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

// The names in dir (through its descriptor, so the directory read is the one checked).
std::vector<std::string> entries_of(const PrivateDir& dir) {
  std::vector<std::string> names;
  const int fd = ::dup(dir.fd.get());
  if (fd < 0) throw SysErrorException({"dup", errno, dir.path.string()});
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    const int e = errno;
    ::close(fd);
    throw SysErrorException({"fdopendir", e, dir.path.string()});
  }
  ::rewinddir(d);  // the dup shares the offset with dir.fd: start from the top every time
  while (const dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<Registration> read_registrations(const PrivateDir& dir,
                                             std::vector<std::string>* skipped) {
  std::vector<Registration> out;
  for (const std::string& name : entries_of(dir)) {
    if (name[0] == '.' || !ends_with(name, ".json")) continue;  // temp files of a writer, litter
    const fs::path file = dir.path / name;
    auto skip = [&](const std::string& why) {
      if (skipped) skipped->push_back(file.string() + ": " + why);
    };
    std::string why;
    const auto text = read_small_file_at(dir, name, &why);
    if (!text) {
      skip(why);
      continue;
    }
    try {
      Json j = parse_json(*text, file.string());
      Registration r;
      r.job = j.at("job").get<std::string>();
      r.pid = j.at("pid").get<long>();
      r.host = j.at("host").get<std::string>();
      const fs::path claimed_socket = j.at("socket").get<std::string>();
      r.output_dir = j.value("output_dir", "");
      r.started_unix_s = j.value("started_unix_s", 0.0);
      r.file = file;
      if (r.job + ".json" != name) {
        skip("its job is not its file's name");
        continue;
      }
      check_job_id(r.job);
      if (claimed_socket.filename() != r.job + ".sock") {
        skip("its socket is not " + r.job + ".sock in this directory");
        continue;
      }
      r.socket = dir.path / (r.job + ".sock");
      out.push_back(std::move(r));
    } catch (const std::exception& e) {
      skip(e.what());
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Registration& a, const Registration& b) { return a.job < b.job; });
  return out;
}

namespace {

bool remove_at(const PrivateDir& dir, const std::string& name, bool socket, std::string* why) {
  struct stat st {};
  if (::fstatat(dir.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return true;
    *why = std::string("fstatat: ") + std::strerror(errno);
    return false;
  }
  if (socket ? !S_ISSOCK(st.st_mode) : !S_ISREG(st.st_mode)) {
    *why = (dir.path / name).string() + " is not a " + (socket ? "socket" : "regular file") +
           ": left alone";
    return false;
  }
  if (::unlinkat(dir.fd.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
    *why = std::string("unlink ") + (dir.path / name).string() + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> socket_names(const PrivateDir& dir) {
  std::vector<std::string> out;
  for (const std::string& name : entries_of(dir)) {
    struct stat st {};
    if (name[0] != '.' && ends_with(name, ".sock") &&
        ::fstatat(dir.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISSOCK(st.st_mode))
      out.push_back(name);
  }
  return out;
}

bool remove_socket_at(const PrivateDir& dir, const std::string& name, std::string* why) {
  return remove_at(dir, name, true, why);
}

bool remove_file_at(const PrivateDir& dir, const std::string& name, std::string* why) {
  return remove_at(dir, name, false, why);
}

std::string this_host() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "localhost";
  return host;
}

}  // namespace fabkit::trainer::control
