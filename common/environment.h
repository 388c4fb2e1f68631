// A snapshot of the process environment, taken once in main and passed down, so judges stay
// pure and tests can hand them any environment.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace fabkit {

class Environment {
 public:
  Environment() = default;
  explicit Environment(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}
  static Environment from_process();

  std::optional<std::string> get(const std::string& name) const;
  bool has(const std::string& name) const { return vars_.count(name) != 0; }
  void set(const std::string& name, const std::string& value) { vars_[name] = value; }
  const std::map<std::string, std::string>& vars() const { return vars_; }

 private:
  std::map<std::string, std::string> vars_;
};

}  // namespace fabkit
