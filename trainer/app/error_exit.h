// How fabtrain ends on an error: the message on stderr, then _Exit. No destructor runs: after a
// failed collective a process group may hold peers' sockets and worker threads whose destructors
// wait on them, and a dead job must never hang on its way out. Every file fabtrain writes as it
// goes (metrics.jsonl, the logs) is flushed line by line, so nothing written is lost.
#pragma once

#include <cstdlib>
#include <iostream>
#include <string>

namespace fabkit::trainer {

[[noreturn]] inline void exit_with_error(int code, const std::string& what) {
  std::cerr << "[fabtrain] error: " << what << std::endl;
  std::cout.flush();
  std::_Exit(code);
}

}  // namespace fabkit::trainer
