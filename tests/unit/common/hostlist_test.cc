// common/hostlist: built without LibTorch too (fabcheck cluster reads SLURM_JOB_NODELIST).
#include "common/hostlist.h"

#include <gtest/gtest.h>

#include "common/errors.h"

namespace fabkit {
namespace {

using Hosts = std::vector<std::string>;

TEST(Hostlist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(expand_hostlist("node[01-04,07],gpu-a[1-2]"),
            (Hosts{"node01", "node02", "node03", "node04", "node07", "gpu-a1", "gpu-a2"}));
  EXPECT_EQ(expand_hostlist("a,b,c"), (Hosts{"a", "b", "c"}));
  EXPECT_EQ(expand_hostlist("r[1-2]-n[1-2]"), (Hosts{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}));
  EXPECT_EQ(expand_hostlist("n[0998-1001]").back(), "n1001");
}

TEST(Hostlist, BadFormsNameTheListAndPosition) {
  for (const char* bad : {"node[01-04", "node]1", "node[4-1]", "a,,b", "a,", ""}) {
    try {
      expand_hostlist(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("position"), std::string::npos) << e.what();
    }
  }
}

// SLURM_JOB_NODELIST is whatever the environment says: a product of two brackets stands for 10^10
// names, which ended in bad_alloc (exit 3) instead of a usage error (exit 2).
TEST(Hostlist, ListsStandingForMoreHostsThanAnyAllocationAreUsageErrors) {
  for (const std::string& bad :
       {std::string("node[1-99999]x[1-99999]"), std::string("n[1-300]x[1-300]"),
        std::string("n[1-65537]"), std::string("a[1-40000],b[1-40000]"),
        std::string("r[1-2,1-2,1-2,1-2,1-2,1-2,1-2,1-2]x[0-9999]")}) {
    try {
      const auto hosts = expand_hostlist(bad);
      ADD_FAILURE() << "accepted " << bad << " as " << hosts.size() << " hosts";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(bad), std::string::npos) << what;
      EXPECT_NE(what.find("more than 65536 hosts"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(expand_hostlist("n[1-256]x[1-256]").size(), kMaxHostlistHosts);
}

TEST(Hostlist, NamesLongerThanADnsNameAreUsageErrors) {
  const std::string long_name(300, 'a');
  for (const std::string& bad :
       {long_name, long_name + "[1-4]", std::string(250, 'b') + "[1-9999]"}) {
    try {
      expand_hostlist(bad);
      ADD_FAILURE() << "accepted a " << bad.size() << "-character name";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("longer than 253 characters"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(expand_hostlist(std::string(253, 'c')).front().size(), 253u);
}

}  // namespace
}  // namespace fabkit
