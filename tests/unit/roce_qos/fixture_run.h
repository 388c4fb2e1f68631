// Runs a tests/fixtures/roce_qos fixture through the whole gather (README.md there): the sysfs
// capture's RoCE port with the fixture's sysfs files laid over it, its DCB and ethtool answers
// replayed, then the judge.
#pragma once

#include <string>
#include <vector>

#include "probes/roce_qos/roce_qos_facts.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {

struct Gathered {
  RoceQosFacts facts;
  std::vector<Finding> findings;
};

Gathered run_fixture(const std::string& name, const fabkit::testing::TempDir& dir);

}  // namespace fabkit::probes
