// The RDMA RC test's flags, shared by `fabcheck pair` and `fabcheck cluster` (docs/pair.md):
// --rc-iters, --rc-size, --rc-lat-iters, perftest's defaults unless given.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "fabric/pair/pair_facts.h"

namespace fabkit::cli {

struct RcArgs {
  int64_t iters = pair::kRcWriteBwIters;
  std::string size = "64K";
  int64_t lat_iters = pair::kRcSendLatIters;
};

void add_rc_options(CLI::App* sub, RcArgs* args);
// Throws UsageError (exit 2) naming the flag, the value and the fix.
pair::RcPlan rc_plan(const RcArgs& args);

}  // namespace fabkit::cli
