// Who did not arrive at a collective: the judge behind fabtrain's collective-timeout error.
#include <gtest/gtest.h>

#include "trainer/distributed/comm_progress.h"

namespace fabkit::trainer {
namespace {

ProgressPost waiting(uint64_t seq, const char* op) { return {seq, op, false}; }
ProgressPost timed_out(uint64_t seq, const char* op) { return {seq, op, true}; }

TEST(CommProgress, PostsRoundTripAndJunkIsNoPost) {
  for (const bool t : {false, true}) {
    const auto p = parse_progress(format_progress({42, "allreduce(f64)", t}));
    ASSERT_TRUE(p);
    EXPECT_EQ(p->seq, 42u);
    EXPECT_EQ(p->op, "allreduce(f64)");
    EXPECT_EQ(p->timed_out, t);
  }
  EXPECT_EQ(format_progress(waiting(7, "barrier")), "7 waiting barrier");
  EXPECT_EQ(format_progress(timed_out(7, "barrier")), "7 timed-out barrier");
  for (const char* junk : {"", "x waiting allreduce", "12", "12 waiting", "12 waiting ",
                           " 12 waiting barrier", "12 asleep barrier", "12 allreduce",
                           "-1 waiting barrier", "99999999999999999999999 waiting barrier"})
    EXPECT_FALSE(parse_progress(junk)) << junk;
}

TEST(CommProgress, SilentAndBehindRanksAreNamedWithTheirHosts) {
  // Rank 0 timed out at #7; rank 1 never posted (SIGSTOP before it blocked anywhere), rank 2
  // timed out at #7 too, rank 3 was last seen at #5, rank 4 waits at #7 with a later deadline.
  std::vector<PeerView> peers(5);
  peers[1].host = "node2 pid 11";
  peers[2] = {timed_out(7, "allreduce"), "node3 pid 12"};
  peers[3] = {waiting(5, "barrier"), "node4 pid 13"};
  peers[4] = {waiting(7, "allreduce"), "node5 pid 14"};
  const Laggards l = judge_laggards(0, timed_out(7, "allreduce"), peers, 2000);
  EXPECT_EQ(l.silent, std::vector<int>{1});
  EXPECT_EQ(l.behind, std::vector<int>{3});
  EXPECT_EQ(l.waiting, std::vector<int>{2});
  EXPECT_EQ(l.quiet, std::vector<int>{4});
  EXPECT_EQ(l.text,
            "rank 1 (node2 pid 11) did not arrive and did not answer (stopped, dead, or busy or "
            "hung outside the collectives); rank 3 (node4 pid 13) did not arrive: last seen "
            "waiting at collective #5 (barrier) and silent since (stopped, dead, or busy or hung "
            "outside the collectives); rank(s) 4 reached this collective but did not time out on "
            "it within 2000 ms of this rank; rank(s) 2 were waiting at this collective too");
}

TEST(CommProgress, EveryoneArrivedAndTimedOutMeansTheNetwork) {
  std::vector<PeerView> peers(3);
  peers[0] = {timed_out(3, "allgather"), "a pid 1"};
  peers[2] = {timed_out(4, "allreduce"), "c pid 3"};  // past it (NCCL issues ahead of its waits)
  const Laggards l = judge_laggards(1, timed_out(3, "allgather"), peers, 750);
  EXPECT_TRUE(l.silent.empty());
  EXPECT_TRUE(l.behind.empty());
  EXPECT_TRUE(l.quiet.empty());
  EXPECT_EQ(l.waiting, (std::vector<int>{0, 2}));
  EXPECT_EQ(l.text,
            "every rank reached collective #3 (allgather) and timed out on it: the network "
            "between the ranks dropped or stalled");
  // Unknown host: said so, never an empty pair of parentheses.
  const Laggards m = judge_laggards(1, timed_out(3, "allgather"), std::vector<PeerView>(2), 750);
  EXPECT_NE(m.text.find("rank 0 (host unknown)"), std::string::npos) << m.text;
}

TEST(CommProgress, ARankThatArrivedAndWentQuietIsNamedNotTheNetwork) {
  // Rank 1 waited at #9 long enough to post, then was stopped there (SIGSTOP while blocked in the
  // collective, a hung GPU): it never times out. Rank 2 timed out there like rank 0. Before the
  // timed-out mark all three looked alike and the network was blamed.
  std::vector<PeerView> peers(3);
  peers[1] = {waiting(9, "allreduce(f64)"), "node2 pid 4242"};
  peers[2] = {timed_out(9, "allreduce(f64)"), "node3 pid 4243"};
  const Laggards l = judge_laggards(0, timed_out(9, "allreduce(f64)"), peers, 2000);
  EXPECT_EQ(l.quiet, std::vector<int>{1});
  EXPECT_EQ(l.waiting, std::vector<int>{2});
  EXPECT_EQ(l.text,
            "rank 1 (node2 pid 4242) reached this collective but did not time out on it within "
            "2000 ms of this rank (stopped or hung after arriving, or it arrived that much later); "
            "every rank reached collective #9 (allreduce(f64)), rank(s) 2 timed out on it too");
  EXPECT_EQ(l.text.find("network"), std::string::npos) << l.text;
}

}  // namespace
}  // namespace fabkit::trainer
