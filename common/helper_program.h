// Where fabcheck finds the helper programs it runs as children (fabcheck-nccl-runner,
// fabcheck-gpu-bench): they link CUDA, NCCL or cuBLAS, which fabcheck itself must not need to start.
#pragma once

#include <string>

namespace fabkit {

struct HelperProgram {
  std::string name;        // the file name, e.g. "fabcheck-gpu-bench"
  std::string env_var;     // an explicit path, first when set and executable
  std::string build_path;  // the build tree's copy, last
};

// The folder cmake/install.cmake installs the helpers into, relative to fabcheck's own
// ("../libexec/fabkit" with GNUInstallDirs' defaults).
std::string installed_helpers_from_bin();

// $env_var, then NAME beside the running executable (self_dir), then
// self_dir/installed_helpers_from_bin()/NAME (the installed layout, relocatable with its prefix),
// then the build tree's; "" when none of them is an executable file.
std::string find_helper_program(const HelperProgram& h, const std::string& self_dir);

// The folder of the running executable (/proc/self/exe), "" where it cannot be read.
std::string self_executable_dir();

}  // namespace fabkit
