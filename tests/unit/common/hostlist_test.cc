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

}  // namespace
}  // namespace fabkit
