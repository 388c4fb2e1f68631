// run_ofi_rdm in a build without libfabric's headers.
#include "fabric/ofi_rdm/ofi_rdm_test.h"

namespace fabkit::fabric::ofi_rdm {

OfiRdmResult run_ofi_rdm(const OfiRdmSpec&, const Environment&, const AddressSwap&) {
  OfiRdmResult r;
  r.status = "unavailable";
  r.code = "unavailable";
  r.reason = "not built with libfabric (install libfabric-dev and rebuild fabcheck)";
  return r;
}

}  // namespace fabkit::fabric::ofi_rdm
