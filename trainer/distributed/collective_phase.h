// Where the run is, named with every collective issued from now on in a timeout's error
// ("allgather of step 12"): the training loop sets "step 12" before the step's collectives, so a
// rank that names a hung collective also names the step it hung in. Process-wide (a pipeline's
// stage groups issue the step's collectives too); empty: the collectives go unnamed.
//
// (Apart from comm.h so that naming the step does not rebuild every user of the comm interface.)
#pragma once

#include <string>
#include <utility>

namespace fabkit::trainer {

void set_collective_phase(std::string phase);

// The phase of a scope (the training loop's): set() names it, and leaving the scope clears it, so
// collectives issued after the loop (or by another loop in the same process) are not named with
// a step that is over.
class CollectivePhaseScope {
 public:
  CollectivePhaseScope() = default;
  ~CollectivePhaseScope() { set_collective_phase(""); }
  CollectivePhaseScope(const CollectivePhaseScope&) = delete;
  CollectivePhaseScope& operator=(const CollectivePhaseScope&) = delete;
  void set(std::string phase) { set_collective_phase(std::move(phase)); }
};

}  // namespace fabkit::trainer
