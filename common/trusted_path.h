// The one rule for what fabkit, running as root on every node, may trust (docs/security.md): a
// program it runs, a library or helper it loads, a directory it writes output into or reads its
// own state from. Each of them, and every directory above it with symbolic links followed, must be
//  - owned by root or by the user running fabkit (the effective uid), and
//  - not writable by group or others — except a directory with the sticky bit (/tmp): others may
//    add entries there but cannot rename or remove the ones root made.
// Anyone else who owns, or may write, one of those entries could put their own program, library or
// file in its place, and root would then run it, load it or write through it. A symbolic link is
// followed only when the link itself is owned by root or this user (it sits in a directory that
// passed the rule, so nobody else could have made it there unless that directory is sticky).
//
// The check reads the path once (lstat per component); it protects against replacements after
// the check because nobody but root and this user can change what passed it. Callers still open
// files once and work through the descriptor where they can.
//
// The receiving side of `--ship` applies the same rule in POSIX sh (fabric/launch/ship.cc): it
// runs before any fabcheck code can be trusted on the host.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace fabkit {

struct TrustOptions {
  // The path itself may be a sticky directory others can write (/tmp as an output directory:
  // files root creates there with O_EXCL cannot be renamed or removed by others).
  bool sticky_leaf_ok = false;
  // The path itself must be a regular file (a program or library), not a directory.
  bool regular_file = false;
  // The user besides root whose entries are trusted: geteuid() when unset (tests pass another).
  std::optional<uid_t> user;
};

// Why `path` fails the rule: the component that fails it, what is wrong with it, and the fix.
struct Distrust {
  std::string component;  // the path as walked, up to the entry that failed
  std::string problem;    // "belongs to uid 1000 (neither root nor this user, uid 0): ..."
  std::string fix;        // "chown root /x" / "chmod go-w /x" / ...
  // "<component> <problem>": for messages that begin with the object they are about.
  std::string message() const { return component + " " + problem; }
};

// nullopt when `path` (absolute, or relative to the current directory) passes the rule; a path that
// does not exist, a loop of symbolic links and a component that cannot be read fail it, named.
std::optional<Distrust> find_distrust(const std::filesystem::path& path,
                                      const TrustOptions& options = {});

// find_distrust, as a UsageError "<what> <path>: <component> <problem>; <fix>".
void require_trusted(const std::string& what, const std::filesystem::path& path,
                     const TrustOptions& options = {});

}  // namespace fabkit
