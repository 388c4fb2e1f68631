#include "fabric/ofi_rdm/ofi_rdm_test.h"

namespace fabkit::fabric::ofi_rdm {

Json to_json(const OfiRdmResult& r) {
  const bool ok = r.status == "ok";
  return {{"status", r.status},
          {"code", r.code.empty() ? Json() : Json(r.code)},
          {"reason", r.reason.empty() ? Json() : Json(r.reason)},
          {"library", r.library.empty() ? Json() : Json(r.library)},
          {"provider", r.provider.empty() ? Json() : Json(r.provider)},
          {"fabric", r.fabric.empty() ? Json() : Json(r.fabric)},
          {"domain", r.domain.empty() ? Json() : Json(r.domain)},
          {"bandwidth_gbps", ok && r.bandwidth_gbps > 0 ? Json(r.bandwidth_gbps) : Json()},
          {"latency_us", ok ? Json(r.latency_us) : Json()},
          {"bytes_moved", r.bytes_moved}};
}

}  // namespace fabkit::fabric::ofi_rdm
