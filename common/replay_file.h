// The JSON file a `--*-replay FILE` option names: answers recorded on another machine (NVML, the
// RoCE QoS kernel interfaces, IB MADs) that a fake replays through the gather's seam.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/json.h"

namespace fabkit {

// Reads and parses `file` for the option `what` (e.g. "--qos-replay FILE"). A file over
// max_bytes (or a stream that does not end by then), one that cannot be read or is not a file
// or pipe (input_file.h), or text that is not JSON (or nested too deep) throws UsageError
// "WHAT: <what is wrong>" followed by `fix` ("; give ...": how to make a good one).
Json read_replay_json(const std::string& what, const std::filesystem::path& file,
                      uintmax_t max_bytes, const std::string& fix);

}  // namespace fabkit
