// The libfabric RDM test's flags, shared by `fabcheck pair` and `fabcheck cluster` (docs/pair.md):
// --ofi-provider, --ofi-messages, --ofi-lat-iters.
#pragma once

#include <CLI/CLI.hpp>

#include "fabric/pair/ofi_rdm_facts.h"

namespace fabkit::cli {

void add_ofi_options(CLI::App* sub, pair::OfiRdmPlan* plan);

}  // namespace fabkit::cli
