// Who did not arrive at a collective: the judge behind fabtrain's collective-timeout error.
#include <gtest/gtest.h>

#include "trainer/distributed/comm_progress.h"

namespace fabkit::trainer {
namespace {

TEST(CommProgress, PostsRoundTripAndJunkIsNoPost) {
  const auto p = parse_progress(format_progress({42, "allreduce(f64)"}));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->seq, 42u);
  EXPECT_EQ(p->op, "allreduce(f64)");
  EXPECT_FALSE(parse_progress(""));
  EXPECT_FALSE(parse_progress("x allreduce"));
  EXPECT_FALSE(parse_progress("12"));
  EXPECT_FALSE(parse_progress(" 12 barrier"));
}

TEST(CommProgress, SilentAndBehindRanksAreNamedWithTheirHosts) {
  // Rank 0 timed out at #7; rank 1 never posted (SIGSTOP before it blocked anywhere), rank 2
  // waits at #7 too, rank 3 was last seen at #5.
  std::vector<PeerView> peers(4);
  peers[1].host = "node2 pid 11";
  peers[2] = {ProgressPost{7, "allreduce"}, "node3 pid 12"};
  peers[3] = {ProgressPost{5, "barrier"}, "node4 pid 13"};
  const Laggards l = judge_laggards(0, {7, "allreduce"}, peers);
  EXPECT_EQ(l.silent, std::vector<int>{1});
  EXPECT_EQ(l.behind, std::vector<int>{3});
  EXPECT_EQ(l.waiting, std::vector<int>{2});
  EXPECT_NE(l.text.find("rank 1 (node2 pid 11) did not arrive and did not answer"),
            std::string::npos)
      << l.text;
  EXPECT_NE(l.text.find("rank 3 (node4 pid 13) did not arrive: last seen waiting at collective #5 "
                        "(barrier)"),
            std::string::npos)
      << l.text;
  EXPECT_NE(l.text.find("rank(s) 2 were waiting"), std::string::npos) << l.text;
}

TEST(CommProgress, EveryoneArrivedMeansTheNetwork) {
  std::vector<PeerView> peers(2);
  peers[0] = {ProgressPost{3, "allgather"}, "a pid 1"};
  const Laggards l = judge_laggards(1, {3, "allgather"}, peers);
  EXPECT_TRUE(l.silent.empty());
  EXPECT_TRUE(l.behind.empty());
  EXPECT_NE(l.text.find("every rank reached collective #3"), std::string::npos) << l.text;
  // Unknown host: said so, never an empty pair of parentheses.
  const Laggards m = judge_laggards(1, {3, "allgather"}, std::vector<PeerView>(2));
  EXPECT_NE(m.text.find("rank 0 (host unknown)"), std::string::npos) << m.text;
}

}  // namespace
}  // namespace fabkit::trainer
