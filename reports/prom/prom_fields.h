// Reading a report document for its Prometheus families (prom_text.cc, prom_cluster.cc): absent
// fields are skipped, fields of the wrong type throw std::invalid_argument naming them.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/json.h"
#include "reports/json/member.h"
#include "reports/prom/prom_text.h"

namespace fabkit::reports::prom {

using Labels = std::vector<std::pair<std::string, std::string>>;

// j[key] as a number; nullopt when absent or null; throws naming where.key otherwise.
std::optional<double> number(const Json& j, const char* key, const std::string& where);
std::string string_or(const Json& j, const char* key, const std::string& fallback);
// {name}{severity} = how many findings of each severity the report has.
Family findings_family(const char* name, const Json& report);

}  // namespace fabkit::reports::prom
