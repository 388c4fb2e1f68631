// Sub-communicators: only options change, so no c10d here (the backends' files keep it).
#include <algorithm>

#include "common/errors.h"
#include "trainer/distributed/comm.h"

namespace fabkit::trainer {

std::unique_ptr<Comm> make_group_comm(const CommOptions& world, const std::vector<int>& ranks,
                                      const std::string& name) {
  auto me = std::find(ranks.begin(), ranks.end(), world.rank);
  FABKIT_ENFORCE(me != ranks.end(),
                 "rank " + std::to_string(world.rank) + " is not in group " + name);
  CommOptions o = world;
  o.rank = static_cast<int>(me - ranks.begin());
  o.world_size = static_cast<int>(ranks.size());
  o.store_prefix = world.store_prefix + "/" + name;
  // The world's rank 0 (or torchrun's agent) already serves the store at master_addr:port; a
  // group's rank 0 starting a second server there would fail on the taken port.
  o.store_hosted_by_agent = true;
  // A CPU group of one needs no process group (the local comm); a GPU one keeps NCCL, which also
  // takes host pointers (make_comm decides as for the world).
  return make_comm(o);
}

}  // namespace fabkit::trainer
