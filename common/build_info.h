// What this binary was built with; reports carry it so a finding can say "built without CUDA".
#pragma once

#include "common/json.h"

namespace fabkit {

const char* fabkit_version();
bool built_with_cuda();
bool built_with_nccl();
bool built_with_verbs();
Json build_info_json();

}  // namespace fabkit
