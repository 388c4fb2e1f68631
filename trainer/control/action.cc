#include "trainer/control/action.h"

namespace fabkit::trainer::control {

const char* to_string(Action a) {
  switch (a) {
    case Action::kNone:
      return "none";
    case Action::kSave:
      return "save";
    case Action::kStop:
      return "stop";
    case Action::kAbort:
      return "abort";
  }
  return "unknown";
}

std::optional<Action> action_from_string(const std::string& s) {
  if (s == "save") return Action::kSave;
  if (s == "stop") return Action::kStop;
  if (s == "abort") return Action::kAbort;
  return std::nullopt;
}

}  // namespace fabkit::trainer::control
