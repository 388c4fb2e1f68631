#include "common/build_info.h"

#include "fabkit/config.h"

namespace fabkit {

const char* fabkit_version() { return FABKIT_VERSION; }
bool built_with_cuda() { return FABKIT_HAVE_CUDA != 0; }
bool built_with_nccl() { return FABKIT_HAVE_NCCL != 0; }
bool built_with_verbs() { return FABKIT_HAVE_VERBS != 0; }

Json build_info_json() {
  return Json{{"fabkit_version", FABKIT_VERSION},
              {"cuda", built_with_cuda()},
              {"nccl", built_with_nccl()},
              {"verbs", built_with_verbs()},
              {"torch", FABKIT_HAVE_TORCH != 0}};
}

}  // namespace fabkit
