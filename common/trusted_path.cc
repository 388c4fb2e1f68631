#include "common/trusted_path.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/errors.h"

namespace fabkit {
namespace fs = std::filesystem;

namespace {

// Linux's own limit on links followed in one lookup (MAXSYMLINKS): past it, a loop.
constexpr int kMaxSymlinks = 40;

std::string octal_mode(mode_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

// The components of `p` after its root, last one first (so the walk pops them in order); "" and
// "." dropped.
void push_components(const fs::path& p, std::vector<std::string>& todo) {
  std::vector<std::string> parts;
  for (const auto& c : p.relative_path()) {
    const std::string s = c.string();
    if (!s.empty() && s != ".") parts.push_back(s);
  }
  todo.insert(todo.end(), parts.rbegin(), parts.rend());
}

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string parent_of(const std::string& dir) {
  const auto slash = dir.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
}

// The rule for one entry that is not a symbolic link. `last`: the entry the caller asked about.
std::optional<Distrust> judge_entry(const std::string& path, const struct stat& st, bool last,
                                    uid_t me, const TrustOptions& o) {
  if (st.st_uid != 0 && st.st_uid != me)
    return Distrust{path,
                    "belongs to uid " + std::to_string(st.st_uid) +
                        " (neither root nor this user, uid " + std::to_string(me) +
                        "): that user could replace it after it is checked",
                    "use a path under directories only you and root can change (or `chown root " +
                        path + "`)"};
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    const bool sticky_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) != 0;
    if (!sticky_dir || (last && !o.sticky_leaf_ok)) {
      const std::string who = (st.st_mode & S_IWOTH) ? "others" : "its group";
      return Distrust{path,
                      "is writable by " + who + (S_ISDIR(st.st_mode) && !sticky_dir
                                                     ? " without the sticky bit"
                                                     : std::string()) +
                          " (mode " + octal_mode(st.st_mode) +
                          "): anyone who may write it could replace it after it is checked",
                      "`chmod go-w " + path + "`, or use a path under directories only you and " +
                          "root can change"};
    }
  }
  if (!last && !S_ISDIR(st.st_mode))
    return Distrust{path, "is not a directory", "give a path whose parents are directories"};
  if (last && o.regular_file && !S_ISREG(st.st_mode))
    return Distrust{path, "is not a regular file", "give the path of the program or library itself"};
  return std::nullopt;
}

}  // namespace

std::optional<Distrust> find_distrust(const fs::path& path, const TrustOptions& o) {
  const uid_t me = o.user.value_or(::geteuid());
  if (path.empty()) return Distrust{"(empty path)", "names nothing", "give a path"};
  std::vector<std::string> todo;
  if (path.is_relative()) {
    // The current directory's own path: a relative path is only as safe as the directories above.
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd) == nullptr)
      return Distrust{path.string(), std::string("cannot be checked: getcwd: ") +
                                         std::strerror(errno),
                      "give an absolute path"};
    push_components(fs::path(path), todo);
    push_components(fs::path(cwd), todo);
  } else {
    push_components(path, todo);
  }

  struct stat st {};
  if (::lstat("/", &st) != 0)
    return Distrust{"/", std::string("cannot be checked: lstat: ") + std::strerror(errno), "—"};
  if (auto d = judge_entry("/", st, todo.empty(), me, o)) return d;

  std::string cur = "/";
  int links = 0;
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    if (name == "..") {
      // `cur` holds no symbolic link (each was replaced by its target), so its parent is real.
      cur = parent_of(cur);
      continue;
    }
    const std::string next = join(cur, name);
    if (::lstat(next.c_str(), &st) != 0) {
      const int err = errno;
      if (err == ENOENT)
        return Distrust{next, "does not exist", "create it, or give a path that exists"};
      return Distrust{next, std::string("cannot be checked: lstat: ") + std::strerror(err),
                      "make sure every directory above it can be read"};
    }
    if (S_ISLNK(st.st_mode)) {
      if (st.st_uid != 0 && st.st_uid != me)
        return Distrust{next,
                        "is a symbolic link owned by uid " + std::to_string(st.st_uid) +
                            " (neither root nor this user, uid " + std::to_string(me) +
                            "): whoever made it chooses where it points",
                        "remove it (`rm " + next + "`), or give the path it should point to"};
      if (++links > kMaxSymlinks)
        return Distrust{path.string(),
                        "has more than " + std::to_string(kMaxSymlinks) +
                            " symbolic links on its way (a loop)",
                        "fix the links"};
      char target[PATH_MAX];
      const ssize_t n = ::readlink(next.c_str(), target, sizeof target - 1);
      if (n <= 0)
        return Distrust{next, std::string("cannot be read: readlink: ") + std::strerror(errno),
                        "make sure the link can be read"};
      const fs::path to(std::string(target, static_cast<size_t>(n)));
      if (to.is_absolute()) cur = "/";
      push_components(to, todo);
      continue;
    }
    // Later components that are ".." still leave this entry an ancestor, not the leaf.
    if (auto d = judge_entry(next, st, todo.empty(), me, o)) return d;
    cur = next;
  }
  return std::nullopt;
}

void require_trusted(const std::string& what, const fs::path& path, const TrustOptions& o) {
  if (auto d = find_distrust(path, o))
    throw UsageError(what + " " + path.string() + ": " + d->message() + "; " + d->fix);
}

}  // namespace fabkit
