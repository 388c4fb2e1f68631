// Gloo's errors in fabkit's terms: its prose mapped to the named kinds every runner reports, and
// the cause a Gloo timeout can hide (a peer that died while a send was being written).
#pragma once

#include <string>

namespace gloo {
class Context;
}

namespace fabkit::fabric {

// "peer_timeout", "peer_closed", "memlock" or "io_error" for a gloo::Exception's what().
std::string gloo_error_kind(const std::string& what);

// After a Gloo timeout on `context` (rank `rank`): the socket error a pair recorded before it
// (Gloo's words, e.g. "Connection reset by peer"), or "" when the timeout was the first error.
// Only after a timeout, which closed every pair: on an open pair the probe would post a send.
std::string recorded_pair_error(gloo::Context& context, int rank);

}  // namespace fabkit::fabric
