// Where fabcheck finds the helper programs it runs as children (fabcheck-nccl-runner,
// fabcheck-gpu-bench): they link CUDA, NCCL or cuBLAS, which fabcheck itself must not need to start.
// fabcheck runs as root, so a helper is run only when it passes common/trusted_path's rule (it and
// every directory above it owned by root or this user, not writable by others): a copy anyone
// could have put there — $TMPDIR/libexec/… beside a --ship copy, a build tree's path — is
// refused and named, never run. No build-tree path is compiled in: in the build tree the helpers
// are built beside fabcheck (build/cli/), as they are installed beside it.
#pragma once

#include <string>
#include <vector>

namespace fabkit {

struct HelperProgram {
  std::string name;     // the file name, e.g. "fabcheck-gpu-bench"
  std::string env_var;  // an explicit path, first when set
};

// The folder cmake/install.cmake installs the helpers into, relative to fabcheck's own
// ("../libexec/fabkit" with GNUInstallDirs' defaults).
std::string installed_helpers_from_bin();

// $env_var, then NAME beside the running executable (self_dir), then
// self_dir/installed_helpers_from_bin()/NAME (the installed layout, relocatable with its prefix):
// the first that is an executable regular file passing the trust rule; "" when none is. Each
// candidate that exists but fails the rule is added to *refused as "<path>: <why>".
std::string find_helper_program(const HelperProgram& h, const std::string& self_dir,
                                std::vector<std::string>* refused = nullptr);

// One explicit path (a test's or a caller's): itself when it is an executable regular file passing
// the trust rule, else "" (and "<path>: <why>" in *refused when it exists but fails the rule).
std::string trusted_helper_path(const std::string& path, std::vector<std::string>* refused);

// "" when nothing was refused; else "; refused <path>: <why>; ..." to end a "not found" message.
std::string refused_suffix(const std::vector<std::string>& refused);

// The folder of the running executable (/proc/self/exe), "" where it cannot be read.
std::string self_executable_dir();

}  // namespace fabkit
