#include <gtest/gtest.h>

#include <sstream>

#include "reports/report_render.h"

namespace fabkit::reports {
namespace {

TEST(TextColor, OnlyOnATtyAndNeverWithNoColor) {
  EXPECT_TRUE(color_enabled(true, nullptr));
  EXPECT_FALSE(color_enabled(false, nullptr));
  EXPECT_FALSE(color_enabled(true, "1"));
  EXPECT_TRUE(color_enabled(true, ""));  // no-color.org: set *and non-empty*
  EXPECT_FALSE(color_enabled(false, ""));
}

TEST(TextColor, SeveritiesColouredWhenAskedPlainOtherwise) {
  Report r{"node", "h", "t", {fail("x.fail", "s", "m", "f"), info("y.info", "s", "m")}, {}};
  std::ostringstream c, p;
  render_text(r, c, true);
  render_text(r, p, false);
  EXPECT_NE(c.str().find("\033[1;31mFAIL\033[0m"), std::string::npos);
  EXPECT_NE(c.str().find("\033[36mINFO\033[0m"), std::string::npos);
  EXPECT_EQ(p.str().find('\033'), std::string::npos);
  EXPECT_NE(p.str().find("  FAIL      x.fail  s: m; fix: f"), std::string::npos) << p.str();
  // render_report into a stream that is not stdout never colors.
  std::ostringstream o;
  render_report(r, false, o);
  EXPECT_EQ(o.str().find('\033'), std::string::npos);
}

}  // namespace
}  // namespace fabkit::reports
