// Runs a tests/fixtures/ib_qos fixture through the whole gather (README.md there): the sysfs
// capture's IB port mlx5_0:1, the fixture's env, its MAD answers replayed, then the judge.
#pragma once

#include <string>
#include <vector>

#include "probes/ib_qos/ib_qos_facts.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {

struct Gathered {
  IbQosFacts facts;
  std::vector<Finding> findings;
};

Gathered run_fixture(const std::string& name, const fabkit::testing::TempDir& dir);

}  // namespace fabkit::probes
