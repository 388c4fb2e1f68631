// The libfabric answers as JSON: what `--ofi-record FILE` writes and `--ofi-replay FILE` reads
// (tests/fixtures/libfabric/README.md), and the facts part of the node's `libfabric` section.
#pragma once

#include <string>

#include "common/json.h"
#include "ofi/ofi_api.h"

namespace fabkit::ofi {

Json to_json(const OfiProvider& p);
Json to_json(const OfiLibrary& l);
// {"library": {...}, "getinfo_error": null | "...", "providers": [...]}
Json discovery_to_json(const OfiDiscovery& d);

// The inverse, for a replay file. A missing or mistyped field throws UsageError naming `what`
// (the option and file), the field's path ("providers[2].caps") and what it must be.
OfiDiscovery discovery_from_json(const Json& j, const std::string& what);

}  // namespace fabkit::ofi
