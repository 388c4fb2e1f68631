// Reading cluster.json: schema first (version, known keys, types, value grammar), then the model.
// Every error is a UsageError naming the file, the field path and the value.
#pragma once

#include <filesystem>
#include <string>

#include "profile/profile_model.h"

namespace fabkit::profile {

// source names the document in messages ("cluster.json"). Throws UsageError.
Profile parse_profile(const std::string& text, const std::string& source);
Profile load_profile(const std::filesystem::path& path);

}  // namespace fabkit::profile
