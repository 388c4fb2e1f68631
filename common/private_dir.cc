#include "common/private_dir.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "common/errors.h"
#include "common/trusted_path.h"

namespace fabkit {
namespace fs = std::filesystem;

namespace {

std::string octal_mode(mode_t m) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

std::string kind_of(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISREG(m)) return "a regular file";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device node";
  return "not a directory";
}

class Refusal {
 public:
  Refusal(const fs::path& dir, const PrivateDirOptions& o) : dir_(dir), o_(o) {}

  // "<what> <dir> <problem>; <fix>, or <alternative>"
  [[noreturn]] void fail(const std::string& problem, const std::string& fix) const {
    std::string msg = o_.what + " " + dir_.string() + " " + problem + "; " + fix;
    if (!o_.alternative.empty()) msg += ", or " + o_.alternative;
    throw UsageError(msg);
  }

 private:
  fs::path dir_;
  const PrivateDirOptions& o_;
};

// realpath(3) of an existing directory; the empty path when it cannot be resolved (errno set).
fs::path resolve(const fs::path& p) {
  std::unique_ptr<char, decltype(&::free)> r(::realpath(p.c_str(), nullptr), &::free);
  return r ? fs::path(r.get()) : fs::path();
}

// Every directory from `resolved` up to /, by the rule of common/trusted_path.h (the directory
// itself may be sticky, as /tmp is): otherwise its owner (or anyone, when it is writable without
// the sticky bit) could rename the directory we check and put another in its place.
void check_ancestors(const fs::path& resolved, const Refusal& refuse) {
  TrustOptions t;
  t.sticky_leaf_ok = true;
  if (auto d = find_distrust(resolved, t))
    refuse.fail("lies under " + d->component + ", which " + d->problem, d->fix);
}

}  // namespace

PrivateDir open_private_dir(const fs::path& dir, const PrivateDirOptions& o) {
  fs::path abs = fs::absolute(dir).lexically_normal();
  if (abs.filename().empty() && abs.has_parent_path() && abs != abs.root_path())
    abs = abs.parent_path();  // "x/" -> "x"
  const Refusal refuse(abs, o);
  const fs::path leaf = abs.filename();
  if (leaf.empty() || leaf == "." || leaf == "..")
    refuse.fail("is not usable as a private directory", "name a directory of its own");
  const fs::path parent = abs.parent_path();

  if (o.create) {
    // Missing parents too are made 0700 (not 0777 & ~umask: with umask 0 they would be open to
    // all, and refused below). Failures show below, where the parent is resolved.
    std::vector<fs::path> missing;
    fs::path existing = parent;
    for (; !existing.empty() && existing != existing.parent_path();
         existing = existing.parent_path()) {
      struct stat st {};
      if (::lstat(existing.c_str(), &st) == 0) break;
      missing.push_back(existing);
    }
    // What exists is checked before anything is made under it: mkdir follows symbolic links in
    // every component but the last, so a link another user left in /tmp would otherwise have root
    // create directories wherever it points.
    check_ancestors(existing.empty() ? fs::path("/") : existing, refuse);
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) ::mkdir(it->c_str(), 0700);
    // 0700 whatever the umask says; an existing entry (EEXIST) is checked below like any other.
    if (::mkdir(abs.c_str(), 0700) != 0 && errno != EEXIST)
      refuse.fail(std::string("cannot be created: ") + std::strerror(errno),
                  "create it yourself with mode 0700");
  }

  const fs::path resolved_parent = resolve(parent);
  if (resolved_parent.empty())
    refuse.fail("cannot be reached: " + parent.string() + ": " + std::strerror(errno),
                "create the directories above it");
  check_ancestors(resolved_parent, refuse);

  UniqueFd parent_fd(::open(resolved_parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent_fd) throw SysErrorException({"open", errno, resolved_parent.string()});
  const uid_t me = ::geteuid();
  UniqueFd fd(
      ::openat(parent_fd.get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd) {
    const int open_errno = errno;
    if (::fstatat(parent_fd.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) refuse.fail("does not exist", "create it with mode 0700");
      throw SysErrorException({"open", open_errno, abs.string()});
    }
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX] = {};
      const ssize_t n = ::readlinkat(parent_fd.get(), leaf.c_str(), target, sizeof target - 1);
      refuse.fail("is a symbolic link" +
                      (n > 0 ? " (to " + std::string(target, static_cast<size_t>(n)) + ")"
                             : std::string()) +
                      ", not a directory of this user's; it is not followed: whoever made it "
                      "(in a shared directory, anyone) chooses where it points",
                  "remove it (`rm " + abs.string() + "`)");
    }
    if (!S_ISDIR(st.st_mode))
      refuse.fail("is " + kind_of(st.st_mode) + ", not a directory",
                  "remove it (`rm " + abs.string() + "`)");
    if (st.st_uid != me)
      refuse.fail("belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
                      std::to_string(me) + ")",
                  "remove it (as its owner or root) after checking what it holds");
    throw SysErrorException({"open", open_errno, abs.string()});
  }
  if (::fstat(fd.get(), &st) != 0) throw SysErrorException({"fstat", errno, abs.string()});
  if (st.st_uid != me)
    refuse.fail("belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
                    std::to_string(me) +
                    "): its owner decides what is in it, and so what fabkit would read and delete",
                "remove it (as its owner or root) after checking what it holds");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    refuse.fail("is writable by " + std::string((st.st_mode & S_IWOTH) ? "others" : "its group") +
                    " (mode " + octal_mode(st.st_mode) +
                    "): anyone who can write there could have planted what fabkit reads and "
                    "deletes",
                "check what it holds, then `chmod 700 " + abs.string() + "` (or remove it)");
  if ((st.st_mode & 077) != 0 && ::fchmod(fd.get(), st.st_mode & 07700) != 0)
    throw SysErrorException({"fchmod", errno, abs.string()});
  return PrivateDir{abs, std::move(fd)};
}

}  // namespace fabkit
