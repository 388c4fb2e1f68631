// The report every fabcheck subcommand builds: findings plus one section of gathered facts per
// probe. reports/ renders it (text, JSON); nothing else prints.
#pragma once

#include <string>
#include <vector>

#include "common/finding.h"
#include "common/json.h"

namespace fabkit {

// Bumped on any incompatible change of a --json document; docs/json-schema.md lists the history.
inline constexpr int kReportSchemaVersion = 1;

struct Section {
  std::string name;  // "rdma", "limits", ... : the JSON key
  Json facts;
};

struct Report {
  std::string kind;  // "node", "topo", "pair", "nccl-log", "validate"
  std::string hostname;
  std::string generated_at;  // RFC 3339 UTC
  std::vector<Finding> findings;
  std::vector<Section> sections;
};

// The facts of the section named `name` when it is a JSON object, else nullptr (a report read
// back from a file may lack a section, or hold a hostile one).
const Json* find_section(const Report& r, const std::string& name);

// 0 clean (info only), 1 warn or fail findings, 2 usage error, 3 internal error (docs/architecture.md).
enum ExitCode : int { kExitClean = 0, kExitFindings = 1, kExitUsage = 2, kExitInternal = 3 };
int exit_code_for(const std::vector<Finding>& findings);

std::string utc_now_rfc3339();

// An empty report of this kind, stamped with this host's kernel hostname ("unknown" when
// gethostname fails) and the time now: how every command's report starts.
Report new_report(const std::string& kind);

}  // namespace fabkit
