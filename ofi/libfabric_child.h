// libfabric's discovery in a child process: `fabcheck ofi-discover` (a hidden subcommand, started
// through the given program, /proc/self/exe in fabcheck) loads libfabric, prints the
// discovery_to_json answer on stdout and exits. libfabric loads providers fabcheck does not
// control: Debian's links libpsm_infinipath and libpsm2, which install signal handlers that
// print a backtrace and exit(1) on SIGABRT and SIGSEGV, so in-process the agent no longer died by
// its signal (issue 40). A child that crashes, hangs past the deadline or prints something else
// gives a library error naming that, never a crash of the caller.
#pragma once

#include <memory>
#include <string>

#include "common/environment.h"
#include "ofi/ofi_api.h"

namespace fabkit::ofi {

inline constexpr char kDiscoverSubcommand[] = "ofi-discover";

// program: the fabcheck executable ("/proc/self/exe" in fabcheck itself).
std::unique_ptr<OfiApi> make_libfabric_child_api(std::string program, int timeout_ms = 20000);

// Whether `program` (resolved when it is /proc/self/exe) is a fabcheck executable: only fabcheck
// has the subcommand, and a test binary started so would run its own tests instead.
bool is_fabcheck_program(const std::string& program);

// The child's side: discovery through make_libfabric_api, its JSON on stdout. Returns 0.
int discover_child_main(const Environment& env);

}  // namespace fabkit::ofi
