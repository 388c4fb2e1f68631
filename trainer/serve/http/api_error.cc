#include "trainer/serve/http/api_error.h"

#include <utility>

namespace fabkit::serve {

ApiError::ApiError(int status, std::string message, std::string type, std::string param,
                   std::string code)
    : std::runtime_error(std::move(message)),
      status_(status),
      type_(std::move(type)),
      param_(std::move(param)),
      code_(std::move(code)) {}

nlohmann::json ApiError::to_json() const {
  nlohmann::json error = {{"message", what()}, {"type", type_}};
  error["param"] = param_.empty() ? nlohmann::json(nullptr) : nlohmann::json(param_);
  error["code"] = code_.empty() ? nlohmann::json(nullptr) : nlohmann::json(code_);
  return {{"error", error}};
}

ApiError bad_field(const std::string& param, const std::string& message) {
  return ApiError(400, message, "invalid_request_error", param, "invalid_value");
}

}  // namespace fabkit::serve
