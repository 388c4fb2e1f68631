// Publishing a file so that readers see either the old state or the whole new file, also after a
// power loss or a kernel crash: the content goes to a temporary file beside the target, which is
// fsynced, renamed over the target, and the directory is fsynced so the rename itself is on disk.
// Without the fsyncs, ext4/xfs may persist the rename before the data: after a crash the target
// exists with zero length (a checkpoint manifest vouching for shards that were never written).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string_view>

namespace fabkit {

// Called by a producer for each piece of the content, in order.
using ByteSink = std::function<void(const void* data, size_t bytes)>;

// Throws SysErrorException naming the call and the path; the temporary file is removed then and
// the target is untouched.
void write_file_durably(const std::filesystem::path& path, const std::function<void(const ByteSink&)>& produce);
void write_file_durably(const std::filesystem::path& path, std::string_view content);

// fsync of a directory: makes the creation, rename or removal of its entries durable.
void fsync_directory(const std::filesystem::path& dir);

}  // namespace fabkit
