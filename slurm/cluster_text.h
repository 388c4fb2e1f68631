// Text rendering of a cluster report: the nodes table, the pair matrix (as a grid up to 16 nodes,
// beyond that the pairs that are not ok), then the findings (reports::render_text). Beside the
// cluster code as pair_text is beside the pair code; it writes only to the stream it is given.
#pragma once

#include <ostream>

#include "common/report.h"

namespace fabkit::slurm {

void render_cluster_text(const Report& r, std::ostream& out);

}  // namespace fabkit::slurm
