// The pair report's text says, for each NCCL transport, the network NCCL used and the net plugin
// that carried it (the runner reads them from its child's log), as characters only.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/json_read.h"
#include "common/report_json.h"
#include "reports/report_render.h"

namespace fabkit::reports {
namespace {

Json pair_fixture() {
  std::ifstream in(std::string(FABKIT_FIXTURES) + "/reports/pair-netns-veth.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_json(ss.str(), "pair-netns-veth.json");
}

std::string text_of(const Json& doc) {
  std::ostringstream out;
  render_text(report_from_json(doc), out);
  return out.str();
}

TEST(PairNetText, CollectiveRowsSayWhichPluginCarriedThem) {
  Json doc = pair_fixture();
  ASSERT_FALSE(doc["pair"]["transports"].empty());
  EXPECT_EQ(text_of(doc).find("NCCL net ("), std::string::npos) << "no net: no line";
  Json& tr = doc["pair"]["transports"][0];
  tr["net"] = {{"name", "IBext"},
               {"plugin", "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\x1b[2J"},
               {"plugin_version", nullptr},
               {"loaded_plugin", "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so"}};
  const std::string t = text_of(doc);
  const std::string want = "NCCL net (" + tr["transport"].get<std::string>() +
                           "): IBext, plugin /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so";
  EXPECT_NE(t.find(want), std::string::npos) << t;
  EXPECT_EQ(t.find('\x1b'), std::string::npos) << "the log's ESC reached the terminal";
  tr["net"]["plugin"] = nullptr;
  tr["net"]["name"] = "Socket";
  EXPECT_NE(text_of(doc).find("): Socket, plugin none"), std::string::npos);
}

}  // namespace
}  // namespace fabkit::reports
