// The real VerbsApi over libibverbs (built when FABKIT_HAVE_VERBS). Discovery contexts are opened
// on first query and closed with this object; data-path objects belong to the caller's RAII
// owners (verbs_objects.h).
#pragma once

#include <memory>

#include "verbs/verbs_api.h"

namespace fabkit::verbs {

std::unique_ptr<VerbsApi> make_ibverbs_api();

}  // namespace fabkit::verbs
