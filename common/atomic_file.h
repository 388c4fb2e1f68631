// The one way fabkit replaces a file: readers see the old content or the new, never a part, and
// after return the new content survives a crash. A temp file in the same directory (rename(2) is
// atomic only within one filesystem), written, fsync'd, renamed over the target, and the directory
// fsync'd so the rename itself is durable. On any failure the temp file is removed and the target
// is untouched.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

namespace fabkit {

// When root writes, the directory must pass common/trusted_path's rule (a sticky one such as /tmp
// may be writable by others): root writing into a directory another user owns or may write would
// let that user swap the file or what it is renamed over. Throws UsageError naming the directory
// when it fails. Other users are not held to it (their group-writable project directories).
void require_trusted_output_dir(const std::filesystem::path& dir);

// require_trusted_output_dir, then the write through the temp file's own descriptor.
// Throws SysErrorException {call, errno, path} (mkstemp, write, fsync, rename, ...).
// mode: the new file's permission bits before the umask (mkstemp alone would give 0600).
void write_file_atomically(const std::filesystem::path& path, const std::string& content, mode_t mode = 0644);

// For large or binary content written piecewise (checkpoints, safetensors): body writes to the
// stream; a stream left in a failed state counts as a write error. Exceptions from body propagate
// after the temp file is removed.
void write_file_atomically(const std::filesystem::path& path, const std::function<void(std::ostream&)>& body,
                           mode_t mode = 0644);

// fsync(2) of a directory, so the renames and creations in it survive a crash. Filesystems that
// refuse fsync on a directory (EINVAL) are left as durable as they can be made.
// Throws SysErrorException {open|fsync, errno, dir}.
void fsync_directory(const std::filesystem::path& dir);

}  // namespace fabkit
