// The Slurm host-list expander moved to common/hostlist.h (fabcheck cluster uses it too); this
// keeps fabtrain's spelling.
#pragma once

#include "common/hostlist.h"

namespace fabkit::trainer {
using fabkit::expand_hostlist;
}  // namespace fabkit::trainer
