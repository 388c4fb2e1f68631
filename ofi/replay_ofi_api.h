// The OfiApi that answers from a file recorded on another node (`fabcheck node --ofi-replay FILE`,
// written there by `--ofi-record FILE` or built from a pasted `fi_info -v`,
// tests/fixtures/libfabric/README.md).
#pragma once

#include <filesystem>
#include <memory>

#include "ofi/ofi_api.h"

namespace fabkit::ofi {

// Reads and checks the file now: a bad one throws UsageError naming the file and the field.
std::unique_ptr<OfiApi> make_replay_ofi_api(const std::filesystem::path& file);

}  // namespace fabkit::ofi
