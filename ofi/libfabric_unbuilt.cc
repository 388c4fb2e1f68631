// make_libfabric_api in a build without libfabric's headers: every live node answers "not built
// with libfabric", so the probe reports why instead of saying nothing.
#include "ofi/libfabric_api.h"

namespace fabkit::ofi {
namespace {

class UnbuiltOfiApi final : public OfiApi {
 public:
  OfiDiscovery discover() override {
    OfiDiscovery d;
    d.source = "libfabric";
    d.library.error =
        "not built with libfabric (this fabcheck was built without libfabric's headers; install "
        "libfabric-dev and rebuild)";
    return d;
  }
};

}  // namespace

std::unique_ptr<OfiApi> make_libfabric_api(const Environment&) {
  return std::make_unique<UnbuiltOfiApi>();
}

}  // namespace fabkit::ofi
