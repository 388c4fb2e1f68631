#include "trainer/control/endpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include "common/errors.h"

namespace fabkit::trainer::control {
namespace fs = std::filesystem;

namespace {

bool is_own_dir(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid();
}

}  // namespace

fs::path control_dir_for(const Environment& env) {
  if (auto d = env.get("FABTRAIN_CONTROL_DIR"); d && !d->empty()) return fs::path(*d);
  if (auto x = env.get("XDG_RUNTIME_DIR"); x && !x->empty() && is_own_dir(*x))
    return fs::path(*x) / "fabtrain";
  return fs::path("/tmp") / ("fabtrain-" + std::to_string(::geteuid()));
}

std::vector<fs::path> control_dirs_to_search(const Environment& env) {
  std::vector<fs::path> out;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) return;
    for (const fs::path& q : out)
      if (fs::equivalent(p, q, ec)) return;
    out.push_back(p);
  };
  // An explicit directory is the only one: the user (or a test) chose where jobs register, and
  // jobs elsewhere on the node (other users' shells, other test runs) are not theirs to list.
  if (auto d = env.get("FABTRAIN_CONTROL_DIR"); d && !d->empty()) {
    add(*d);
    return out;
  }
  if (auto x = env.get("XDG_RUNTIME_DIR"); x && !x->empty()) add(fs::path(*x) / "fabtrain");
  add(fs::path("/tmp") / ("fabtrain-" + std::to_string(::geteuid())));
  return out;
}

void ensure_private_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir.parent_path(), ec);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      throw SysErrorException({"mkdir", errno, dir.string()});
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw SysErrorException({"stat", errno, dir.string()});
  if (!S_ISDIR(st.st_mode))
    throw UsageError("control directory " + dir.string() +
                     " is not a directory (a symlink or file there is refused): remove it, or set "
                     "FABTRAIN_CONTROL_DIR to another path");
  if (st.st_uid != ::geteuid())
    throw UsageError("control directory " + dir.string() + " is owned by uid " +
                     std::to_string(st.st_uid) + ", not by this user (uid " +
                     std::to_string(::geteuid()) +
                     "): set FABTRAIN_CONTROL_DIR to a directory of your own");
  if ((st.st_mode & 077) != 0) {
    // Ours but open to others (made by hand, or an old umask): close it rather than refuse.
    if (::chmod(dir.c_str(), 0700) != 0) throw SysErrorException({"chmod", errno, dir.string()});
  }
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

std::vector<Registration> read_registrations(const fs::path& dir,
                                             std::vector<std::string>* skipped) {
  std::vector<Registration> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path& p = entry.path();
    if (p.extension() != ".json") continue;
    try {
      std::ifstream in(p);
      Json j = Json::parse(in);
      Registration r;
      r.job = j.at("job").get<std::string>();
      r.pid = j.at("pid").get<long>();
      r.host = j.at("host").get<std::string>();
      r.socket = j.at("socket").get<std::string>();
      r.output_dir = j.value("output_dir", "");
      r.started_unix_s = j.value("started_unix_s", 0.0);
      r.file = p;
      out.push_back(std::move(r));
    } catch (const std::exception& e) {
      if (skipped) skipped->push_back(p.string() + ": " + e.what());
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Registration& a, const Registration& b) { return a.job < b.job; });
  return out;
}

std::string this_host() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "localhost";
  return host;
}

}  // namespace fabkit::trainer::control
