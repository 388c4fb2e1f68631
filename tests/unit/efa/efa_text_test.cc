// The node report's EFA line (reports/text/efa_text.cc) on the facts of the EFA captures.
#include <gtest/gtest.h>

#include <sstream>

#include "probes/efa/efa_facts.h"
#include "reports/text/text_parts.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

std::string render(const EfaFacts& f) {
  Report r;
  r.kind = "node";
  r.sections.push_back({"efa", to_json(f)});
  std::ostringstream out;
  reports::text::render_efa(r, out, reports::text::Style{});
  return out.str();
}

TEST(EfaText, CountAgainstTheTypeAndDownDevicesListed) {
  EfaFacts f;
  f.sys_vendor = "Amazon EC2";
  f.product_name = "p5.48xlarge";
  f.on_aws = true;
  f.instance = find_efa_instance("p5.48xlarge");
  f.hugepages_total = 5128;
  f.hugepages_free = 0;
  for (int i = 0; i < 31; ++i) {
    EfaDevice d;
    d.name = "rdmap" + std::to_string(79 + i) + "s0";
    d.state = i == 3 ? verbs::PortState::kDown : verbs::PortState::kActive;
    f.devices.push_back(d);
  }
  const std::string text = render(f);
  EXPECT_NE(text.find("EFA: p5.48xlarge, 31 of 32 EFA devices, device RDMA yes; huge pages 0 free "
                      "of 5128"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rdmap82s0"), std::string::npos) << text;  // the table: one is DOWN
  EXPECT_NE(text.find("DOWN"), std::string::npos) << text;
}

TEST(EfaText, NothingOnANodeWithoutEfa) { EXPECT_EQ(render(EfaFacts{}), ""); }

}  // namespace
}  // namespace fabkit::probes
