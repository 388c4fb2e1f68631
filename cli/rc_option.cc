#include "cli/rc_option.h"

#include "fabric/pair/rdma_rc_plan.h"

namespace fabkit::cli {

void add_rc_options(CLI::App* sub, RcArgs* a) {
  // Ranges are checked in rc_plan, where the message can say what the agents take and why.
  sub->add_option("--rc-iters", a->iters,
                  "RDMA RC write bandwidth: writes per port pair (default 5000, as ib_write_bw)");
  sub->add_option("--rc-size", a->size,
                  "RDMA RC write bandwidth: bytes per write, e.g. 64K (default, as ib_write_bw), "
                  "up to 16M");
  sub->add_option("--rc-lat-iters", a->lat_iters,
                  "RDMA RC send latency: 2-byte ping-pongs per port pair (default 1000, as "
                  "ib_send_lat)");
}

pair::RcPlan rc_plan(const RcArgs& a) { return pair::parse_rc_plan(a.iters, a.size, a.lat_iters); }

}  // namespace fabkit::cli
