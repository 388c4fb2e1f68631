// The shared vocabulary of every probe: a Finding says what was seen on which object, what was
// expected, and the exact fix. Severity is ordered so "worst of" is a max().
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json.h"

namespace fabkit {

enum class Severity { kInfo = 0, kWarn = 1, kFail = 2 };

const char* to_string(Severity s);
std::optional<Severity> severity_from_string(const std::string& s);

struct Finding {
  Severity severity = Severity::kInfo;
  std::string code;     // stable, dotted: "rdma.port_down"; catalogued in docs/findings.md
  std::string subject;  // the object: "mlx5_0:1", "RLIMIT_MEMLOCK", "eth0"
  std::string message;  // what was seen and what was expected
  std::string fix;      // the exact command or config line; empty only for info
};

Finding info(std::string code, std::string subject, std::string message, std::string fix = {});
Finding warn(std::string code, std::string subject, std::string message, std::string fix);
Finding fail(std::string code, std::string subject, std::string message, std::string fix);

Severity worst_severity(const std::vector<Finding>& findings);  // kInfo when empty
Json to_json(const Finding& f);
Finding finding_from_json(const Json& j);  // throws std::invalid_argument naming the field

}  // namespace fabkit
