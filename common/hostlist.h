// Slurm's compressed host lists (SLURM_JOB_NODELIST): "node[01-04,07],gpu-a[1-2]", "n1,n2",
// "rack[1-2]-n[01-02]". Hand-written: the only library that parses these is libslurm's
// slurm_hostlist_create, which a node launched by torchrun or mpirun may not have. Shared by
// fabtrain (the master address) and `fabcheck cluster` (the hosts of an allocation).
#pragma once

#include <string>
#include <vector>

namespace fabkit {

// Slurm's own bound on a job's nodes (MaxNodeCount tops out far below it); a list that stands for
// more is hostile or corrupt, and its expansion ("n[1-99999]x[1-99999]") would not fit in memory.
inline constexpr size_t kMaxHostlistHosts = 65536;
// A DNS name is at most 253 characters; a longer one cannot be a host to connect to.
inline constexpr size_t kMaxHostNameChars = 253;

// Expands in order (first host = Slurm's master convention). Zero padding of a range is kept
// ("[08-10]" -> 08, 09, 10). Throws UsageError naming the list and the position of the fault,
// also before expanding past kMaxHostlistHosts hosts or kMaxHostNameChars characters a name.
std::vector<std::string> expand_hostlist(const std::string& list);

}  // namespace fabkit
