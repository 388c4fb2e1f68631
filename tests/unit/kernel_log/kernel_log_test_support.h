// What the kernel-log tests share: a fixture's text and the findings of one code or subject.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/finding.h"
#include "tests/support/ttar.h"

namespace fabkit::probes::test_support {

// tests/fixtures/kernel_log/<name> as one string ("" when it is missing: the test then fails on
// what it expected to find).
inline std::string fixture_text(const std::string& name) {
  std::ifstream in(testing::project_fixtures() / "kernel_log" / name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<Finding> with(const std::vector<Finding>& fs, const std::string& code) {
  std::vector<Finding> out;
  for (const auto& f : fs)
    if (f.code == code) out.push_back(f);
  return out;
}

inline const Finding* finding_for(const std::vector<Finding>& fs, const std::string& subject) {
  for (const auto& f : fs)
    if (f.subject == subject) return &f;
  return nullptr;
}

}  // namespace fabkit::probes::test_support
