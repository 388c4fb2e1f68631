// The name emit-env and validate resolve for when --host is not given.
#pragma once

#include <string>

namespace fabkit::profile {

// gethostname(2); throws UsageError asking for --host when it fails or is not a valid name.
std::string local_hostname();

}  // namespace fabkit::profile
