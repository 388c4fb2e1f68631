// Reading a captured tree (`--sysroot DIR`) the way the captured machine would have been read,
// without ever leaving the tree. fabcheck runs as root, and the tree may be another user's: a
// symlink in it to /etc/shadow must not be followed out of it, a FIFO must not hang the probe,
// a symlink loop must not stop it. So every path under a confined tree resolves inside the tree
// as if the tree were `/` (openat2 RESOLVE_IN_ROOT: an absolute link restarts at DIR, `..` stops
// at DIR), only regular files are read, and what cannot be read is remembered as a refusal the
// node report names.
//
// The readers of common/file_reader.h (read_text, read_line, read_int, list_dir,
// symlink_basename) and the functions below take full paths, as they always did: a path
// lexically under a live ConfinedTree's directory (DIR/sys/..., as SystemRoots builds them) goes
// through the tree; any other path is read exactly as before, so the live system (root `/`,
// where no tree is registered) reads /sys and /proc unchanged.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/errors.h"
#include "common/unique_fd.h"

namespace fabkit {

// A read under a tree that failed for a reason other than an absent file: the path as the probe
// asked for it and why ("a FIFO: ...", "a symlink loop ...").
struct TreeRefusal {
  std::string path;
  std::string reason;
};

enum class PathKind { kAbsent, kRegular, kDirectory, kOther };

class ConfinedTree {
 public:
  explicit ConfinedTree(std::filesystem::path dir);
  const std::filesystem::path& dir() const { return dir_; }

  // The part of p below dir ("sys/class/net/eth0/mtu"; "." for dir itself); nullopt when p is
  // not lexically under dir (both taken against the working directory) or starts with dir/..
  // Not normalised: a `..` further down is resolved inside the tree.
  std::optional<std::string> relative(const std::filesystem::path& p) const;

  // p opened for reading (O_NONBLOCK, so a FIFO swapped in never blocks the open) after checking
  // it is a regular file. SysError names p: ENOENT when absent (also through a link out of the
  // tree), ELOOP, EISDIR, and EINVAL for a FIFO, socket or device (its kind in the object).
  std::variant<UniqueFd, SysError> open_file(const std::filesystem::path& p) const;
  // At most max_bytes of the regular file p (read_text's contract).
  std::variant<std::string, SysError> read_text(const std::filesystem::path& p,
                                                size_t max_bytes) const;
  // The entries of directory p, unsorted; nullopt when p is not a directory in the tree.
  std::optional<std::vector<std::string>> list_dir(const std::filesystem::path& p) const;
  // The text of the symlink p (its directory resolved in the tree, p itself not followed).
  std::optional<std::string> read_link(const std::filesystem::path& p) const;
  // What p is, symlinks followed inside the tree.
  PathKind kind(const std::filesystem::path& p) const;

  // Every refusal so far, one per path, in the order they happened.
  std::vector<TreeRefusal> refusals() const;

 private:
  void refuse(const std::filesystem::path& p, std::string reason) const;
  // A lookup of rel failed with err: a loop, or an absent target of a link, is a refusal.
  void note_failure(const std::filesystem::path& p, const std::string& rel, int root,
                    int err) const;
  // DIR itself (O_PATH), opened at the first read and kept. DIR is the user's choice and may be a
  // symlink; nothing below it is followed out.
  std::variant<int, SysError> root_fd() const;

  std::filesystem::path dir_;
  std::vector<std::string> components_;
  mutable std::mutex mu_;
  mutable UniqueFd root_fd_;
  mutable std::vector<TreeRefusal> refusals_;
};

// Confines every read under dir (see above) while a copy of the returned pointer lives. Asking
// again for a dir already confined returns the same tree, so its refusals are in one place.
// Never throws: a dir that does not exist yet confines reads that then find nothing.
std::shared_ptr<const ConfinedTree> confine_reads_under(const std::filesystem::path& dir);
// The live tree p is lexically under; null for a path under none (the live system).
std::shared_ptr<const ConfinedTree> tree_holding(const std::filesystem::path& p);

// p opened for reading: through its tree (regular files only) or, under no tree, open(2) with
// O_RDONLY | O_CLOEXEC | live_flags as before. SysError names p.
std::variant<UniqueFd, SysError> open_for_reading(const std::filesystem::path& p,
                                                  int live_flags = 0);
// std::filesystem::exists / is_directory / is_regular_file, through p's tree when it has one;
// false rather than a throw when the answer is an error (a loop, a permission).
bool path_exists(const std::filesystem::path& p);
bool path_is_directory(const std::filesystem::path& p);
bool path_is_regular_file(const std::filesystem::path& p);
// The text of the symlink p (std::filesystem::read_symlink), through p's tree when it has one.
std::optional<std::string> read_link(const std::filesystem::path& p);

// Opens rel below root_fd as openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) does, one
// component at a time with O_NOFOLLOW: for kernels before 5.6 (and sandboxes that filter
// openat2). flags as for openat (O_PATH allowed); returns the descriptor or -errno. Exposed so its
// tests drive it where the kernel has openat2.
int open_in_root_by_walk(int root_fd, const std::string& rel, int flags);
// The same through openat2 where the kernel has it, else the walk.
int open_in_root(int root_fd, const std::string& rel, int flags);

}  // namespace fabkit
