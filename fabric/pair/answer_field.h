// Reading a field of an agent's answer. The agent may be hostile or broken: a field of the wrong
// type is a std::invalid_argument naming it, which the caller turns into a failed measurement or
// step; nlohmann's own type_error would end the controller (exit 3) with no report.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/json.h"

namespace fabkit::pair {

// Absent or null gives `otherwise`; present with another type throws std::invalid_argument.
template <typename T>
T answer_field(const Json& m, const char* key, T otherwise) {
  if (!m.is_object()) throw std::invalid_argument("the answer is not a JSON object");
  auto it = m.find(key);
  if (it == m.end() || it->is_null()) return otherwise;
  bool ok;
  if constexpr (std::is_same_v<T, Json>)
    ok = true;  // the caller checks the shape
  else if constexpr (std::is_same_v<T, std::string>)
    ok = it->is_string();
  else if constexpr (std::is_same_v<T, bool>)
    ok = it->is_boolean();
  else if constexpr (std::is_unsigned_v<T>)
    ok = it->is_number_unsigned() || (it->is_number_integer() && it->template get<int64_t>() >= 0);
  else if constexpr (std::is_integral_v<T>)
    ok = it->is_number_integer() && it->template get<int64_t>() >= INT32_MIN &&
         it->template get<int64_t>() <= INT32_MAX;
  else
    ok = it->is_number();
  if (!ok)
    throw std::invalid_argument(std::string("field '") + key + "' is " + it->dump().substr(0, 64) +
                                ", of the wrong type");
  return it->template get<T>();
}

}  // namespace fabkit::pair
