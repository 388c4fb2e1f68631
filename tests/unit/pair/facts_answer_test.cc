// The controller's reading of an agent's facts answer (pair_steps.h agent_facts): a hostile or
// broken agent's wrong-typed field is a StepError on that host naming the field (the facts step
// fails, the report is still written), never nlohmann's type_error (exit 3, no report).
#include <gtest/gtest.h>

#include "fabric/pair/pair_steps.h"
#include "fabric/pair/rdma_rails.h"
#include "fabric/pair/transport_plan.h"

namespace fabkit::pair {
namespace {

Json honest_facts() {
  return Json::parse(R"({
    "report": {"kind": "node", "findings": []},
    "interfaces": {"source": "net", "interfaces": [
      {"name": "eth0", "up": true, "running": true, "kind": "physical", "mtu": 1500,
       "addresses": [{"family": "ipv4", "address": "198.18.0.1", "prefix_len": 24}]}]},
    "transports": ["raw-exchange", "gloo-tcp"]})");
}

std::string error_for(const Json& facts) {
  try {
    agent_facts("node2", Json::object(), facts);
  } catch (const StepError& e) {
    EXPECT_EQ(e.host(), "node2");
    EXPECT_EQ(e.code(), "pair.agent_error");
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << facts.dump();
  return {};
}

TEST(FactsAnswer, HonestAnswerIsRead) {
  AgentFacts a = agent_facts("node2", Json::object(), honest_facts());
  EXPECT_EQ(a.interfaces_source, "net");
  ASSERT_EQ(a.candidates.size(), 1u);
  EXPECT_EQ(a.candidates[0].addr, "198.18.0.1");
  EXPECT_EQ(a.transports, (std::vector<std::string>{"raw-exchange", "gloo-tcp"}));
}

TEST(FactsAnswer, WrongTypesFailTheStepNamingTheField) {
  const std::string pre = "unusable facts answer: ";
  EXPECT_EQ(error_for(Json("facts")), pre + "the answer is not a JSON object");
  Json f = honest_facts();
  f["interfaces"] = "eth0";
  EXPECT_EQ(error_for(f), pre + "field 'interfaces' is \"eth0\", not an object");
  f = honest_facts();
  f["interfaces"]["source"] = 3;
  EXPECT_EQ(error_for(f), pre + "interfaces: field 'source' is 3, of the wrong type");
  f = honest_facts();
  f["interfaces"]["interfaces"][0]["up"] = "yes";
  EXPECT_EQ(error_for(f),
            pre + "interfaces: interfaces[0]: field 'up' is \"yes\", of the wrong type");
  f = honest_facts();
  f["interfaces"]["interfaces"][0]["addresses"][0]["address"] = 7;
  EXPECT_EQ(
      error_for(f),
      pre + "interfaces: interfaces[0]: addresses[0]: field 'address' is 7, of the wrong type");
  f = honest_facts();
  f["report"] = Json::array();
  EXPECT_EQ(error_for(f), pre + "field 'report' is [], not a node report object");
  f = honest_facts();
  f["transports"] = {"gloo-tcp", 5};
  EXPECT_EQ(error_for(f), pre + "transports[1] is 5, not a name");
}

// The node report inside the facts is read by the RDMA planners: a wrong-typed port field there
// makes that port unusable (not planned on), never an exception.
TEST(FactsAnswer, WrongTypedReportFieldsAreNotPlannedOn) {
  Json report = Json::parse(R"({"kind": "node", "rdma": {"devices": [{"name": "mlx5_0", "ports": [
      {"port": 1, "state": 4, "link_layer": ["InfiniBand"], "gids": [{"index": "0", "gid": 1}]}]}]},
      "nccl_env": {"variables": [{"name": 5, "value": "mlx5_0"}]}})");
  EXPECT_NO_THROW(plan_rails(report, report));
  EXPECT_TRUE(active_link_layers(report).empty());
  report["rdma"]["devices"][0]["ports"][0]["state"] = "ACTIVE";
  EXPECT_TRUE(active_link_layers(report).empty());  // the link layer is unreadable
  AgentFacts a, b;
  a.host = "a";
  b.host = "b";
  a.report = b.report = report;
  EXPECT_NO_THROW(plan_transport("gloo-ibverbs", a, b));
}

}  // namespace
}  // namespace fabkit::pair
