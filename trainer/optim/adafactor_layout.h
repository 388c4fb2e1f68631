// Adafactor's per-shard layout and checkpoint state, shared by the host loop (adafactor.cc) and
// the tensor implementation (tensor_adafactor.cc), so a checkpoint moves between CPU and GPU runs.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/optim/optimizer.h"

namespace fabkit::trainer {

struct AdafactorFactor {           // one parameter's view inside one shard
  int64_t lo = 0, hi = 0;          // shard-local element range [lo, hi)
  int64_t first = 0;               // the parameter's element index at lo
  int64_t rows = 1, cols = 1;      // factored shape; cols == 0 marks "not factored"
  int64_t row_at = 0, col_at = 0;  // offsets into the unit's stats vector
  int64_t v_at = 0;                // offset into the unit's v vector (unfactored only)
  int64_t numel = 0;               // the whole parameter's element count (for the RMS)
};

struct AdafactorUnitLayout {
  std::vector<AdafactorFactor> factors;  // every parameter of the unit, in shard order
  int64_t stats = 0;                     // row + column statistics of the factored ones
  int64_t v = 0;                         // unfactored elements in this slice
};

AdafactorUnitLayout adafactor_layout(const FlatShard& shard);

// The checkpoint arrays "factored_row_col" and "v" for `shard` from the old ranks' arrays.
std::vector<NamedArray> adafactor_reshard_state(
    const FlatShard& shard, const std::vector<std::vector<NamedArray>>& old_ranks);

}  // namespace fabkit::trainer
