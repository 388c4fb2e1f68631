#include "ofi/replay_ofi_api.h"

#include "common/replay_file.h"
#include "ofi/ofi_json.h"

namespace fabkit::ofi {
namespace {

class ReplayOfiApi final : public OfiApi {
 public:
  explicit ReplayOfiApi(OfiDiscovery d) : d_(std::move(d)) {}
  OfiDiscovery discover() override { return d_; }

 private:
  OfiDiscovery d_;
};

}  // namespace

std::unique_ptr<OfiApi> make_replay_ofi_api(const std::filesystem::path& file) {
  const std::string what = "--ofi-replay " + file.string();
  // A whole EFA node's answer is a few KiB (32 providers on a p5); 1 MiB is far above it.
  Json j = read_replay_json(what, file, 1u << 20,
                            "; give a file written by `fabcheck node --ofi-record FILE`");
  OfiDiscovery d = discovery_from_json(j, what);
  d.source = file.string();
  return std::make_unique<ReplayOfiApi>(std::move(d));
}

}  // namespace fabkit::ofi
