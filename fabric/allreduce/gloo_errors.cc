#include "fabric/allreduce/gloo_errors.h"

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/unbound_buffer.h>

namespace fabkit::fabric {

// Gloo reports everything as gloo::IoException / EnforceNotMet with prose; map the prose to the
// same named kinds our own runners use so the controller handles all transports alike.
std::string gloo_error_kind(const std::string& what) {
  // Gloo's ibv_reg_mr failure: "ibv_reg_mr: Cannot allocate memory (did you run into the locked
  // memory limit?)".
  if (what.find("locked memory limit") != std::string::npos) return "memlock";
  // TCP: "Timed out waiting ..."; ibverbs: "Read timeout", "Send timeout", "Timeout waiting for
  // memory region from ...".
  if (what.find("imed out") != std::string::npos || what.find("imeout") != std::string::npos)
    return "peer_timeout";
  if (what.find("closed") != std::string::npos || what.find("reset") != std::string::npos ||
      what.find("refused") != std::string::npos || what.find("Broken pipe") != std::string::npos)
    return "peer_closed";
  return "io_error";
}

// Gloo's TCP pair, on a socket error, wakes the waits it keeps in its pending lists but not a
// send already being written (its tx queue wakes bound buffers only: gloo tcp Pair::signalException
// in Debian's 2022 snapshot). When the peer dies mid-send the error is recorded on the pair at
// once, yet the caller hears "Timed out waiting N ms for send operation" only at the timeout. A
// timeout leaves every pair closed, each holding its first error; a pair's send rethrows that error
// before doing anything (Debian's package lacks a header tcp/pair.h needs, so the tcp Pair's own
// accessor is out of reach). A socket error found there is the cause to report, as peer_closed.
std::string recorded_pair_error(gloo::Context& context, int rank) {
  float probe = 0;
  auto buffer = context.createUnboundBuffer(&probe, sizeof(probe));
  for (int peer = 0; peer < context.size; ++peer) {
    if (peer == rank) continue;
    try {
      context.getPair(peer)->send(buffer.get(), /*tag=*/0, 0, 0);
    } catch (const gloo::Exception& e) {
      std::string what = e.what();
      // The timeout itself closes every pair with this message; only an earlier error is a cause.
      if (what.find("Application timeout") == std::string::npos &&
          gloo_error_kind(what) == "peer_closed")
        return what;
    }
  }
  return "";
}

}  // namespace fabkit::fabric
