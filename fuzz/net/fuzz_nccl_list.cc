// Any NCCL_SOCKET_IFNAME / NCCL_IB_HCA text: parse, match against device names, look for
// ambiguities. Invariants: no crash; exact lists never report ambiguities; an empty list selects
// everything; exclude flips include for the same entries.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "probes/net/nccl_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabkit::probes;
  std::string text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> names = {"eth0", "eth1", "ib0", "mlx5_1", "mlx5_10", "lo", ""};
  for (size_t max : {kNcclMaxSocketEntries, kNcclMaxHcaEntries}) {
    NcclList l = parse_nccl_list(text, max);
    if (l.entries.size() > max) std::abort();
    if (l.exact && !nccl_list_ambiguities(l, names).empty()) std::abort();
    for (const auto& n : names) {
      bool sel = nccl_list_selects(l, n);
      if (l.entries.empty() && !sel) std::abort();
      NcclList flipped = l;
      flipped.exclude = !l.exclude;
      if (!l.entries.empty() && nccl_list_selects(flipped, n) == sel) std::abort();
    }
    nccl_list_unmatched(l, names);
    for (const auto& e : l.entries) to_string(e);
  }
  return 0;
}
