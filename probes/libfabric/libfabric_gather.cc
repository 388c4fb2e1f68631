#include "ofi/libfabric_api.h"
#include "ofi/libfabric_child.h"
#include "ofi/replay_ofi_api.h"
#include "probes/libfabric/libfabric_facts.h"

namespace fabkit::probes {

LibfabricFacts gather_libfabric(ofi::OfiApi& api) {
  LibfabricFacts f;
  f.gathered = true;
  f.discovery = api.discover();
  return f;
}

LibfabricFacts gather_libfabric(const ProbeContext& ctx) {
  if (ctx.options.ofi_replay) {
    auto api = ofi::make_replay_ofi_api(*ctx.options.ofi_replay);
    return gather_libfabric(*api);
  }
  if (!ctx.roots.live) {
    LibfabricFacts f;
    f.not_gathered_reason =
        "--sysroot: this machine's libfabric is not the captured node's; give the node's "
        "answers with --ofi-replay FILE (recorded there with --ofi-record FILE)";
    return f;
  }
  // In a child where the caller names fabcheck: libfabric's providers load libraries that install
  // signal handlers and threads of their own (ofi/libfabric_child.h says which).
  const auto& program = ctx.options.ofi_discovery_program;
  auto api = program && ofi::is_fabcheck_program(*program) ? ofi::make_libfabric_child_api(*program)
                                                           : ofi::make_libfabric_api(ctx.env);
  return gather_libfabric(*api);
}

}  // namespace fabkit::probes
