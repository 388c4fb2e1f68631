// The real VerbsApi over libibverbs (built when FABKIT_HAVE_VERBS). Discovery contexts are opened
// on first query and closed with this object; data-path objects belong to the caller's RAII
// owners (verbs_objects.h).
#pragma once

#include <memory>

#include "verbs/verbs_api.h"

namespace fabkit::verbs {

std::unique_ptr<VerbsApi> make_ibverbs_api();

}  // namespace fabkit::verbs

// The conversion of one libibverbs work completion, exposed for its test. Only a successful
// completion's opcode is defined (ibv_poll_cq(3): "opcode ... valid only if status is
// IBV_WC_SUCCESS"): an error completion is never read as a receive or a send.
struct ibv_wc;
namespace fabkit::verbs {
WorkCompletion completion_from(const ibv_wc& wc);

}  // namespace fabkit::verbs
