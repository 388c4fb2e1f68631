// The controller's reading of an agent's tcp_measure answer (pair_steps.h link_from_json): a good
// answer carries its RTT histogram into the pair JSON; a bad one (hostile or broken agent) makes
// the link "error" with the field named, and never reaches the report as figures.
#include <gtest/gtest.h>

#include "fabric/pair/pair_document.h"
#include "fabric/pair/pair_steps.h"
#include "fabric/tcp/tcp_test.h"

namespace fabkit::pair {
namespace {

Candidate cand(const std::string& ifname, const std::string& addr) {
  Candidate c;
  c.ifname = ifname;
  c.addr = addr;
  return c;
}

// What an agent answers, built by the agent's own serialiser from real samples.
Json agent_answer(const std::vector<double>& rtts_us) {
  tcp::LinkMeasurement m;
  m.status = tcp::ConnectStatus::kOpen;
  m.rtt = tcp::ping_stats(rtts_us);
  m.single_stream_gbit_s = 9.5;
  m.streams = 1;
  return tcp::to_json(m);
}

std::vector<double> samples() {
  std::vector<double> v;
  for (int i = 0; i < 100; ++i) v.push_back(20.0 + (i % 10) * 3.0 + (i == 99 ? 400.0 : 0.0));
  return v;
}

TEST(LinkAnswer, HistogramCarriedIntoThePairLinkJson) {
  Json m = agent_answer(samples());
  LinkResult l = link_from_json(cand("eth0", "10.0.0.1"), cand("eth0", "10.0.0.2"), m, 100);
  ASSERT_EQ(l.status, "open") << l.error;
  ASSERT_TRUE(l.rtt_histogram);
  EXPECT_EQ(l.rtt_histogram->total(), 100u);
  Json j = pair::to_json(l, true);
  const Json& h = j["rtt_histogram"];
  EXPECT_EQ(h["unit"], "us");
  uint64_t sum = h["overflow"].get<uint64_t>();
  for (const auto& c : h["counts"]) sum += c.get<uint64_t>();
  EXPECT_EQ(sum, 100u);
  EXPECT_EQ(h["edges"].size(), h["counts"].size() + 1);
  // The largest sample (427 µs) is in the last bucket, the smallest (20 µs) in the first.
  EXPECT_LE(h["edges"].front().get<double>(), 20.0);
  EXPECT_GT(h["edges"].back().get<double>(), 427.0);
}

TEST(LinkAnswer, ClosedLinkHasNoHistogram) {
  Json m = {{"status", "closed"}, {"error", "connection refused"}};
  LinkResult l = link_from_json(cand("eth0", "10.0.0.1"), cand("eth1", "10.0.1.2"), m, 100);
  EXPECT_EQ(l.status, "closed");
  EXPECT_TRUE(pair::to_json(l, false)["rtt_histogram"].is_null());
}

std::string error_for(const Json& m, int pings = 100) {
  LinkResult l = link_from_json(cand("eth0", "10.0.0.1"), cand("eth0", "10.0.0.2"), m, pings);
  EXPECT_EQ(l.status, "error");
  EXPECT_FALSE(l.rtt_histogram);
  EXPECT_TRUE(pair::to_json(l, false)["rtt_histogram"].is_null());
  return l.error;
}

TEST(LinkAnswer, BadAnswersMakeTheLinkAnErrorNamingTheField) {
  const Json good = agent_answer(samples());
  const std::string pre = "the agent's tcp_measure answer from 10.0.0.1 is malformed: ";

  Json m = good;
  m["rtt"]["histogram"]["counts"][0] = -4;
  EXPECT_EQ(error_for(m).rfind(pre + "rtt.histogram.counts[0]: -4 is negative", 0), 0u)
      << error_for(m);

  m = good;
  m["rtt"]["histogram"]["counts"][0] = m["rtt"]["histogram"]["counts"][0].get<int>() + 1;
  EXPECT_NE(
      error_for(m).find("rtt.histogram.counts: the counts and overflow sum to 101, not the 100"),
      std::string::npos);

  m = good;  // more buckets than the layout has
  for (int i = 0; i < 200; ++i) m["rtt"]["histogram"]["counts"].push_back(0);
  EXPECT_NE(error_for(m).find("rtt.histogram.counts: "), std::string::npos);

  m = good;
  m["rtt"]["histogram"]["edges"][0] = 0.5;
  EXPECT_NE(error_for(m).find("rtt.histogram.edges[0]"), std::string::npos);

  m = good;
  m["rtt"]["histogram"] = "lots";
  EXPECT_NE(error_for(m).find("rtt.histogram: must be an object"), std::string::npos);

  // The ping count must be what the controller asked for: a histogram of 100 is no answer to 200.
  EXPECT_NE(error_for(good, 200).find("rtt.count: 100, the controller asked for 200 pings"),
            std::string::npos);

  m = good;
  m["rtt"]["median_us"] = "fast";
  EXPECT_NE(error_for(m).find("rtt.median_us: must be a non-negative number"), std::string::npos);

  m = good;
  m.erase("rtt");
  EXPECT_NE(error_for(m).find("rtt: missing or not an object"), std::string::npos);
}

// The rest of the answer is typed too: a wrong-typed field fails that link by name instead of
// throwing nlohmann's type_error out of the controller (which ended fabcheck pair with exit 3).
TEST(LinkAnswer, WrongTypedFieldsFailTheLinkByName) {
  const Json good = agent_answer(samples());
  auto error_for = [](const Json& m) {
    LinkResult l = link_from_json(cand("eth0", "10.0.0.1"), cand("eth0", "10.0.0.2"), m, 100);
    EXPECT_EQ(l.status, "error");
    return l.error;
  };
  for (const char* key : {"single_stream_gbit_s", "connect_time_us", "streams", "status"}) {
    Json m = good;
    m[key] = Json::array({1});
    EXPECT_NE(error_for(m).find(std::string("field '") + key + "'"), std::string::npos) << key;
  }
  Json m = good;
  m["streams"] = int64_t{1} << 40;  // out of an int's range
  EXPECT_NE(error_for(m).find("field 'streams'"), std::string::npos);
  EXPECT_NE(error_for(Json("open")).find("not a JSON object"), std::string::npos);
}

// An all-reduce answer of the wrong shape from one rank fails that transport, with the field.
TEST(LinkAnswer, MalformedAllreduceRankFailsTheTransportByName) {
  const Json ok = {{"status", "ok"},
                   {"sizes", Json::array({{{"bytes", 1024}, {"time_us", 10.0}, {"algbw_gbps", 0.1},
                                           {"busbw_gbps", 0.1}, {"correct", true}}})}};
  TransportResult t = combine_ranks("gloo-tcp", {ok, ok});
  EXPECT_EQ(t.status, "ok");
  ASSERT_EQ(t.sizes.size(), 1u);
  EXPECT_TRUE(t.sizes[0].correct);

  Json bad = ok;
  bad["sizes"][0]["bytes"] = -5;
  t = combine_ranks("gloo-tcp", {ok, bad});
  EXPECT_EQ(t.status, "failed");
  EXPECT_TRUE(t.sizes.empty());
  EXPECT_NE(t.reason.find("gloo-tcp answer is malformed: field 'bytes'"), std::string::npos)
      << t.reason;
  EXPECT_EQ(t.ranks.size(), 2u);  // both answers kept as sent

  t = combine_ranks("gloo-tcp", {ok, Json("junk")});
  EXPECT_EQ(t.status, "failed");
  EXPECT_NE(t.reason.find("not a JSON object"), std::string::npos) << t.reason;

  bad = ok;
  bad["sizes"] = "many";
  EXPECT_EQ(combine_ranks("gloo-tcp", {bad, ok}).status, "failed");
}

// Rank 0's fastest call travels with the mean; an older rank that does not send it reads as 0.
TEST(LinkAnswer, TheFastestCallIsReadAndItsAbsenceIsZero) {
  Json with = {{"status", "ok"},
               {"sizes", Json::array({{{"bytes", 1024}, {"time_us", 30.0}, {"best_time_us", 10.0},
                                       {"algbw_gbps", 0.1}, {"busbw_gbps", 0.1}, {"correct", true}}})}};
  Json without = with;
  without["sizes"][0].erase("best_time_us");
  TransportResult t = combine_ranks("fabkit-socket", {with, without});
  ASSERT_EQ(t.sizes.size(), 1u);
  EXPECT_EQ(t.sizes[0].best_time_us, 10.0);
  EXPECT_EQ(t.sizes[0].time_us, 30.0);
  t = combine_ranks("fabkit-socket", {without, with});
  ASSERT_EQ(t.sizes.size(), 1u);
  EXPECT_EQ(t.sizes[0].best_time_us, 0.0);
  Json wrong = with;
  wrong["sizes"][0]["best_time_us"] = "fast";
  t = combine_ranks("fabkit-socket", {wrong, with});
  EXPECT_EQ(t.status, "failed");
  EXPECT_NE(t.reason.find("field 'best_time_us'"), std::string::npos) << t.reason;
}

}  // namespace
}  // namespace fabkit::pair
