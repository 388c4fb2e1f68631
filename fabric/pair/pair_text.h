// Text rendering of a pair report: the links table, the rendezvous check, the transport ranking,
// then the findings (reports::render_text). Kept beside the pair code until reports/ grows a
// per-kind renderer hook; it writes only to the stream it is given.
#pragma once

#include <ostream>

#include "common/report.h"

namespace fabkit::pair {

void render_pair_text(const Report& r, std::ostream& out);

}  // namespace fabkit::pair
