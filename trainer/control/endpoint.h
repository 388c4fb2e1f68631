// Where a running job's control socket lives and how `fabtrain control list` finds it.
//
// One directory per user and node, not the run's output directory:
//  - `list` must find every job on this node without being told their output directories;
//  - a Unix socket path must fit sun_path (108 bytes), and output directories on shared
//    filesystems are often deeper than that;
//  - output directories are often shared between nodes, and a socket file there would be visible
//    but unreachable from the other nodes (Unix sockets are node-local).
// The directory: $FABTRAIN_CONTROL_DIR when set; else $XDG_RUNTIME_DIR/fabtrain when
// XDG_RUNTIME_DIR is an existing directory owned by this user (a login session's tmpfs); else
// /tmp/fabtrain-<uid> (batch jobs often have no XDG_RUNTIME_DIR, or one inherited from the
// submitting shell that does not exist on the compute node). The client searches all of them,
// unless $FABTRAIN_CONTROL_DIR is set: then only that one.
// Each job there: <job>.sock (the socket, 0600) and <job>.json (its registration, 0600).
//
// Trust: `cleanup` deletes sockets there, often as root, and anyone can create /tmp/fabtrain-0
// before root does. So the directory goes through common/private_dir.h (ours, not a symlink, not
// writable by others, nor anything above it replaceable by others) before anything in it is
// read, and every read and delete is relative to its descriptor. A registration only names a
// job: its socket is always <dir>/<job>.sock, whatever path the file claims, so no registration
// can point a delete elsewhere.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/json.h"
#include "common/private_dir.h"

namespace fabkit::trainer::control {

inline constexpr int kProtocolVersion = 1;

// The directory a job registers in (see above).
std::filesystem::path control_dir_for(const Environment& env);
// Every directory `list` and `cleanup` look in: those that exist (as anything: a symlink there is
// refused by open_control_dir, not skipped), without duplicates.
std::vector<std::filesystem::path> control_dirs_to_search(const Environment& env);

// The control directory, checked (common/private_dir.h); create: mkdir 0700 when missing (the
// job's side). UsageError naming the directory, what is wrong and the fix.
PrivateDir open_control_dir(const std::filesystem::path& dir, bool create);

// Job ids become file names: 1-64 of [A-Za-z0-9._-], not starting with '.'. UsageError otherwise,
// naming the value.
void check_job_id(const std::string& job);
// A job id from the output directory's name (characters outside the set above become '-').
std::string job_id_from_output_dir(const std::filesystem::path& output_dir);

struct Registration {
  std::string job;
  long pid = 0;
  std::string host;
  std::filesystem::path socket;  // read back: always <dir>/<job>.sock (see above)
  std::filesystem::path output_dir;
  double started_unix_s = 0;
  std::filesystem::path file;  // the .json it was read from
};

// A registration file is at most this long (a real one is ~250 bytes): larger ones are skipped
// unread.
inline constexpr size_t kMaxRegistrationBytes = 64 * 1024;

Json to_json(const Registration& r);
// Every <job>.json in dir (a regular file, not a symlink, read through dir.fd). Skipped, and
// described in *skipped when given: unreadable or malformed files (a job being registered right
// now, or litter), and registrations whose job is not their file's name or whose socket is not
// named <job>.sock.
std::vector<Registration> read_registrations(const PrivateDir& dir,
                                             std::vector<std::string>* skipped = nullptr);

// The names of the sockets (<name>.sock, fstatat without following) in dir.
std::vector<std::string> socket_names(const PrivateDir& dir);
// Removes dir/name when it is a socket (fstatat without following, then unlinkat): true when
// removed or already gone; false, with *why, when something else has that name.
bool remove_socket_at(const PrivateDir& dir, const std::string& name, std::string* why);
// Removes dir/name when it is a regular file; the same contract.
bool remove_file_at(const PrivateDir& dir, const std::string& name, std::string* why);

std::string this_host();

}  // namespace fabkit::trainer::control
