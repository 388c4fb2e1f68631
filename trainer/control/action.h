// What the training loop is asked to do at the next step boundary. Ordered by strength, so that
// when several requests meet (a `save` from one shell, SIGTERM from Slurm, a second Ctrl-C) the
// strongest wins: the order is what agree_on_action takes the maximum of.
#pragma once

#include <optional>
#include <string>

namespace fabkit::trainer::control {

enum class Action : int {
  kNone = 0,
  kSave = 1,   // write a checkpoint now, keep training
  kStop = 2,   // write a checkpoint, then exit cleanly (exit code 0)
  kAbort = 3,  // exit at once without saving
};

const char* to_string(Action a);                                 // "none", "save", "stop", "abort"
std::optional<Action> action_from_string(const std::string& s);  // the names above, except "none"

inline Action stronger(Action a, Action b) {
  return static_cast<int>(a) >= static_cast<int>(b) ? a : b;
}

}  // namespace fabkit::trainer::control
