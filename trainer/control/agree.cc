#include "trainer/control/agree.h"

namespace fabkit::trainer::control {

Action agree_on_action(Comm& comm, Action local) {
  // counts[i]: how many ranks asked for Action(i + 1). Doubles count exactly to 2^53 ranks.
  double counts[3] = {0, 0, 0};
  if (local != Action::kNone) counts[static_cast<int>(local) - 1] = 1;
  comm.allreduce_sum(counts, 3);
  for (int i = 2; i >= 0; --i)
    if (counts[i] > 0.5) return static_cast<Action>(i + 1);
  return Action::kNone;
}

}  // namespace fabkit::trainer::control
