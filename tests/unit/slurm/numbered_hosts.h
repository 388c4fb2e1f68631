// Host names for the matrix judge's unit tests: n0 ... n{count-1}, node i's index its number.
#pragma once

#include <string>
#include <vector>

namespace fabkit::slurm {

inline std::vector<std::string> numbered_hosts(int count) {
  std::vector<std::string> h;
  for (int i = 0; i < count; ++i) h.push_back("n" + std::to_string(i));
  return h;
}

}  // namespace fabkit::slurm
