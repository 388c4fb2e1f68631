#include "trainer/control/agree.h"

namespace fabkit::trainer::control {

Votes vote_for(Action local) {
  Votes v{0, 0, 0};  // v[i]: a vote for Action(i + 1)
  if (local != Action::kNone) v[static_cast<size_t>(local) - 1] = 1;
  return v;
}

Action agreed_action(const double* summed) {
  for (int i = static_cast<int>(kVotes) - 1; i >= 0; --i)
    if (summed[i] > 0.5) return static_cast<Action>(i + 1);
  return Action::kNone;
}

Action agree_on_action(Comm& comm, Action local) {
  Votes v = vote_for(local);
  comm.allreduce_sum(v.data(), v.size());
  return agreed_action(v.data());
}

}  // namespace fabkit::trainer::control
