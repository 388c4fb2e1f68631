#include <gtest/gtest.h>

#include "common/finding.h"
#include "common/report.h"
#include "reports/report_render.h"

namespace fabkit {

TEST(Finding, SeverityIsOrderedAndWorstWins) {
  EXPECT_LT(Severity::kInfo, Severity::kWarn);
  EXPECT_LT(Severity::kWarn, Severity::kFail);
  EXPECT_EQ(worst_severity({}), Severity::kInfo);
  EXPECT_EQ(worst_severity({info("a", "x", "m"), fail("b", "y", "m", "f"), warn("c", "z", "m", "f")}),
            Severity::kFail);
}

TEST(Finding, ExitCodeIsOneOnlyForWarnOrWorse) {
  EXPECT_EQ(exit_code_for({}), kExitClean);
  EXPECT_EQ(exit_code_for({info("a", "x", "m")}), kExitClean);
  EXPECT_EQ(exit_code_for({warn("a", "x", "m", "f")}), kExitFindings);
  EXPECT_EQ(exit_code_for({fail("a", "x", "m", "f")}), kExitFindings);
}

TEST(Finding, JsonRoundTripAndErrorsNameTheField) {
  Finding f = warn("limits.nofile_low", "RLIMIT_NOFILE", "low", "ulimit -n 65536");
  Finding back = finding_from_json(to_json(f));
  EXPECT_EQ(back.code, f.code);
  EXPECT_EQ(back.severity, Severity::kWarn);
  Json bad = to_json(f);
  bad["severity"] = "critical";
  try {
    finding_from_json(bad);
    FAIL() << "accepted severity 'critical'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("severity"), std::string::npos);
  }
}

TEST(Report, JsonHasSchemaVersionFirstAndSectionsAfterFindings) {
  Report r;
  r.kind = "node";
  r.hostname = "h";
  r.generated_at = "2026-01-01T00:00:00Z";
  r.findings.push_back(info("rdma.none", "node", "no RDMA devices"));
  r.sections.push_back({"limits", Json{{"source", "getrlimit"}}});
  Json j = report_to_json(r);
  EXPECT_EQ(j.begin().key(), "schema_version");
  EXPECT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["limits"]["source"], "getrlimit");
  Report back = report_from_json(j);
  ASSERT_EQ(back.sections.size(), 1u);
  EXPECT_EQ(back.sections[0].name, "limits");
  j["schema_version"] = kReportSchemaVersion + 1;
  EXPECT_THROW(report_from_json(j), std::invalid_argument);
}

}  // namespace fabkit
