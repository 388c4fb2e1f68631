#include "common/wait_status.h"

#include <sys/wait.h>

#include <cstring>

namespace fabkit {

std::string signal_name(int sig) {
  // glibc's own abbreviation table (2.32+), so the names are the kernel's and never drift.
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* what = ::sigdescr_np(sig);
    return "killed by " + signal_name(sig) + " (signal " + std::to_string(sig) +
           (what != nullptr ? std::string(": ") + what : std::string()) + ")" +
           (WCOREDUMP(status) ? ", core dumped" : "");
  }
  return "wait status " + std::to_string(status);
}

}  // namespace fabkit
