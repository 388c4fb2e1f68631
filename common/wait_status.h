// A child's end in words, with the signal's name: "killed by SIGABRT (signal 6: Aborted)" tells
// an operator at once that a library called abort(), where "signal 6" needs a table.
#pragma once

#include <string>

namespace fabkit {

// "SIGABRT" for 6; "signal 77" for a number without a name.
std::string signal_name(int sig);
// A waitpid status: "exit status 3", "killed by SIGSEGV (signal 11: Segmentation fault)" (with
// ", core dumped" when the kernel wrote one).
std::string describe_wait_status(int status);

}  // namespace fabkit
