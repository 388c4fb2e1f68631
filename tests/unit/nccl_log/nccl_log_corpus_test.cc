// The classifier on real logs of failed jobs, copied from public issue threads
// (tests/fixtures/nccl_log/real/README.md gives each one's thread and what was cut). Each file's
// expected answer is in expectations.json: the failure kind that caused it ("none" when the log
// shows none), the network, and who said it first where the log shows it. Held-out logs were
// collected after the rules were written; the test reports accuracy on them separately.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "common/json.h"
#include "fabric/nccl_log/nccl_failure_kinds.h"
#include "fabric/nccl_log/nccl_log.h"
#include "tests/support/ttar.h"

namespace fabkit::nccl_log {
namespace {

std::filesystem::path real_dir() {
  return fabkit::testing::project_fixtures() / "nccl_log" / "real";
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Json expectations() { return Json::parse(read(real_dir() / "expectations.json")); }

// The answer for one log: "" when right, else what differed. Without `first`: kind, network and
// the findings only, not who said it first.
std::string check(const Json& e, bool first_sayer = true) {
  const std::string text = read(real_dir() / e.at("file").get<std::string>());
  if (text.empty()) return "empty or missing file";
  const NcclLogSummary s = parse_nccl_log(text);
  std::string why;
  const std::string kind = s.cause_kind.value_or("none");
  if (kind != e.at("kind").get<std::string>())
    why += " kind " + kind + " (expected " + e.at("kind").get<std::string>() + ")";
  const Json& net = e.at("network");
  const std::string want_net = net.is_null() ? "null" : net.get<std::string>();
  if (s.network.value_or("null") != want_net)
    why += " network " + s.network.value_or("null") + " (expected " + want_net + ")";
  if (first_sayer && !s.failures.empty()) {
    const NcclLogError& first = s.errors.at(s.failures.front().first_error);
    for (const auto& [k, v] : e.at("first").items()) {
      std::string got = k == "host"   ? first.host
                        : k == "peer" ? first.peer
                        : k == "rank" ? (first.rank ? std::to_string(*first.rank) : "null")
                                      : "?";
      std::string want = v.is_string() ? v.get<std::string>() : v.dump();
      if (got != want) why += " first." + k + " " + got + " (expected " + want + ")";
    }
  } else if (first_sayer && !e.at("first").empty()) {
    why += " no failure to name who said it first";
  }
  // Every log is explained in JSON and findings without throwing, and no log with NCCL or
  // PyTorch-NCCL lines is answered "no NCCL INFO lines".
  for (const auto& f : judge_nccl_log(s, std::nullopt))
    if (f.code == "nccl_log.no_nccl_info") why += " answered no_nccl_info";
  to_json(s).dump();
  return why;
}

TEST(NcclLogCorpus, EveryKindOfTheIssueHasARealLog) {
  std::set<std::string> kinds;
  for (const auto& e : expectations()) kinds.insert(e.at("kind").get<std::string>());
  for (const char* k :
       {"peer_reset", "peer_closed", "broken_pipe", "connect_failed", "bootstrap_failed",
        "watchdog_timeout", "nccl_system_error", "transport_retry_exceeded",
        "local_protection_error", "qp_create_failed", "cq_create_failed", "qp_transition_failed",
        "ibv_reg_mr_failed", "libibverbs_missing", "no_socket_interface", "cuda_error",
        "out_of_memory", "topology_error", "none"})
    EXPECT_TRUE(kinds.count(k)) << k << " has no real log in the corpus";
  EXPECT_GE(expectations().size(), 40u);
}

TEST(NcclLogCorpus, EveryExpectedKindIsAKnownKind) {
  for (const auto& e : expectations()) {
    const std::string k = e.at("kind").get<std::string>();
    if (k == "none") continue;
    EXPECT_EQ(std::string(failure_kind(k).kind), k) << e.at("file");
  }
}

TEST(NcclLogCorpus, TrainingLogsAreAllRight) {
  for (const auto& e : expectations()) {
    if (e.at("held_out").get<bool>()) continue;
    EXPECT_EQ(check(e), "") << e.at("file").get<std::string>() << " "
                            << e.at("url").get<std::string>();
  }
}

// The goal is about logs the rules never saw: at least 90% of held-out logs right. Which ones
// failed is printed, so a regression or a new miss is visible.
TEST(NcclLogCorpus, HeldOutLogsAreAtLeastNinetyPercentRight) {
  int n = 0, right = 0;
  for (const auto& e : expectations()) {
    if (!e.at("held_out").get<bool>()) continue;
    ++n;
    const std::string why = check(e);
    if (why.empty())
      ++right;
    else
      std::cout << "held-out miss: " << e.at("file").get<std::string>() << why << "\n";
  }
  std::cout << "held-out: " << right << "/" << n << " right\n";
  ASSERT_GE(n, 8);
  EXPECT_GE(right * 10, n * 9);
}

// Once a batch's first-run misses are fixed (first_run keeps the figure the goal is judged on),
// every held-out log keeps its kind and network: a rule change that breaks one fails here, not
// only when it takes the whole corpus under 90%. Who said it first is still wrong for a few
// (a custom logger's prefix, a host the excerpt cut, a rank known only from a later traceback
// or line, torch's rank against the group's, twice); they are listed, and their number may only
// go down.
TEST(NcclLogCorpus, HeldOutLogsStayRightAfterTheirFixes) {
  constexpr int kKnownFirstSayerMisses = 6;
  int first_sayer_misses = 0;
  for (const auto& e : expectations()) {
    if (!e.at("held_out").get<bool>()) continue;
    EXPECT_EQ(check(e, false), "") << e.at("file").get<std::string>() << " "
                                   << e.at("url").get<std::string>();
    const std::string why = check(e);
    if (!why.empty()) {
      ++first_sayer_misses;
      std::cout << "first-sayer miss: " << e.at("file").get<std::string>() << why << "\n";
    }
  }
  EXPECT_LE(first_sayer_misses, kKnownFirstSayerMisses);
}

TEST(NcclLogCorpus, EveryKindHasItsExplanation) {
  for (const auto& k : failure_kinds()) {
    EXPECT_FALSE(std::string(k.title).empty()) << k.kind;
    EXPECT_FALSE(std::string(k.meaning).empty()) << k.kind;
    EXPECT_FALSE(k.causes.empty()) << k.kind;
    EXPECT_FALSE(std::string(k.fix).empty()) << k.kind;
  }
}

}  // namespace
}  // namespace fabkit::nccl_log

namespace fabkit::nccl_log {
namespace {

// Finding codes nccl_log.<kind> are built from the kind table, so the docs test that scans the
// source for literal codes cannot see them: every kind must be in the catalogue by name.
TEST(NcclLogCorpus, EveryKindIsInTheFindingCatalogue) {
  const std::string doc = read(fabkit::testing::project_fixtures().parent_path().parent_path() /
                               "docs" / "findings" / "nccl_log.md");
  ASSERT_FALSE(doc.empty());
  for (const auto& k : failure_kinds())
    EXPECT_NE(doc.find("`nccl_log." + std::string(k.kind) + "`"), std::string::npos) << k.kind;
}

}  // namespace
}  // namespace fabkit::nccl_log
