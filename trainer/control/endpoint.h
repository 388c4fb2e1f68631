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
// Each job there: <job>.sock (the socket, 0600) and <job>.json (its registration, 0600); the
// directory is 0700 and must be owned by this user (checked, not assumed: /tmp is shared).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/environment.h"
#include "common/json.h"

namespace fabkit::trainer::control {

inline constexpr int kProtocolVersion = 1;

// The directory a job registers in (see above).
std::filesystem::path control_dir_for(const Environment& env);
// Every directory `list` and `cleanup` look in, existing ones only, without duplicates.
std::vector<std::filesystem::path> control_dirs_to_search(const Environment& env);

// Creates dir 0700 if missing; refuses (UsageError naming the directory and the fix) one owned by
// another user or open to group/others, so nobody else can plant or read sockets there.
void ensure_private_dir(const std::filesystem::path& dir);

// Job ids become file names: 1-64 of [A-Za-z0-9._-], not starting with '.'. UsageError otherwise,
// naming the value.
void check_job_id(const std::string& job);
// A job id from the output directory's name (characters outside the set above become '-').
std::string job_id_from_output_dir(const std::filesystem::path& output_dir);

struct Registration {
  std::string job;
  long pid = 0;
  std::string host;
  std::filesystem::path socket;
  std::filesystem::path output_dir;
  double started_unix_s = 0;
  std::filesystem::path file;  // the .json it was read from
};

Json to_json(const Registration& r);
// Every <job>.json in dir; unreadable or malformed files are skipped (a job being registered
// right now, or litter) and reported in *skipped when given.
std::vector<Registration> read_registrations(const std::filesystem::path& dir,
                                             std::vector<std::string>* skipped = nullptr);

std::string this_host();

}  // namespace fabkit::trainer::control
