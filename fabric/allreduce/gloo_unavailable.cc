// Built only when Gloo or libibverbs is missing: the runners answer "unavailable" with the reason,
// so the verdict still lists the transport and why it was not measured.
#include "fabric/allreduce/runners.h"

namespace fabkit::fabric {
namespace {
TransportRun not_built(const std::string& transport) {
  TransportRun run;
  run.transport = transport;
  run.status = "unavailable";
  run.reason = "this fabcheck was built without Gloo/libibverbs (install libgloo-dev and libibverbs-dev, rebuild)";
  run.extra["error"] = "not_built";
  return run;
}
}  // namespace

TransportRun run_gloo_tcp_allreduce(const AllreduceSpec&) { return not_built("gloo-tcp"); }
TransportRun run_gloo_ibverbs_allreduce(const AllreduceSpec&, const std::string&, int, int) {
  return not_built("gloo-ibverbs");
}
}  // namespace fabkit::fabric
