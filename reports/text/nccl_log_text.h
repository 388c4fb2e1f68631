// The `nccl_log` section as text (nccl_log_text.cc): used by `fabcheck nccl-log` and by
// fabtrain when a collective fails and it explains NCCL's log.
#pragma once

#include <ostream>

#include "common/json.h"
#include "reports/text/text_parts.h"

namespace fabkit::reports::text {

// The network, each failure explained (meaning, ordered causes, fix, who said it first) with the
// others as its consequences, and the per-rank view. `log` is nccl_log::to_json's object.
void render_nccl_log_section(const Json& log, std::ostream& out, const Style& style);

}  // namespace fabkit::reports::text
