// The one check for a per-user directory fabkit trusts (fabtrain's control directory: it reads
// registrations there and deletes the sockets they belong to). A directory in a shared place such
// as /tmp can be made by anyone before we get there: a symlink to a directory of theirs, a
// directory of theirs with our name, or one of ours left open to others all let another user
// choose what we read and, through it, what we delete. So before anything inside is trusted:
//  - the directory itself is opened with O_NOFOLLOW|O_DIRECTORY (a symlink is refused, not
//    followed) and checked on the open descriptor (fstat): owned by this user (euid), a
//    directory, no write access for group or others;
//  - read/search access for group or others is closed (fchmod 0700): nobody else could have
//    planted anything through those bits, so tightening is safe where refusing would only annoy;
//  - every directory above it (symlinks resolved) is owned by root or this user and, when others
//    may write it, sticky (like /tmp): otherwise another user could rename ours away and put
//    theirs in its place after the check;
//  - the caller then works relative to the descriptor (openat, fstatat, unlinkat), so a path
//    swapped after the check cannot redirect a read or a delete.
// A missing directory is created 0700 (mkdir, then the same checks: an attacker's directory
// created in between fails them). Every refusal is a UsageError naming the directory, what is
// wrong, and the fix.
#pragma once

#include <filesystem>
#include <string>

#include "common/unique_fd.h"

namespace fabkit {

struct PrivateDir {
  std::filesystem::path path;  // absolute, as checked; for messages and for bind/connect
  UniqueFd fd;                 // O_RDONLY|O_DIRECTORY: use with openat/fstatat/unlinkat
};

struct PrivateDirOptions {
  // How messages name the directory: "control directory".
  std::string what = "directory";
  // The alternative offered in every refusal: "set FABTRAIN_CONTROL_DIR to a directory of your
  // own".
  std::string alternative;
  bool create = false;  // mkdir 0700 (and missing parents) when it does not exist
};

// Throws UsageError as described above; SysErrorException when a system call fails for another
// reason (EIO, ENOMEM...). With create == false, a missing directory is UsageError too.
PrivateDir open_private_dir(const std::filesystem::path& dir, const PrivateDirOptions& options);

}  // namespace fabkit
