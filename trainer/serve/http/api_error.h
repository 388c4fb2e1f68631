// OpenAI's error shape, {"error": {"message", "type", "param", "code"}}, with the HTTP status it
// goes with. Every refusal of the HTTP side is an ApiError thrown where the problem is found and
// rendered in one place (http_server.cc), so a client library sees the shape it expects.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace fabkit::serve {

class ApiError : public std::runtime_error {
 public:
  // type is OpenAI's: "invalid_request_error" (400/404/413), "authentication_error" (401),
  // "server_error" (5xx). param names the request field at fault, "" when none.
  ApiError(int status, std::string message, std::string type, std::string param = "",
           std::string code = "");
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  nlohmann::json to_json() const;

 private:
  int status_;
  std::string type_, param_, code_;
};

// 400 invalid_request_error naming the field.
ApiError bad_field(const std::string& param, const std::string& message);

}  // namespace fabkit::serve
