// NCCL's interface/HCA list grammar (NCCL_SOCKET_IFNAME, NCCL_IB_HCA), reproduced from NCCL's
// src/misc/utils.cc parseStringList/matchIfList and the callers in src/misc/socket.cc and
// src/transport/net_ib.cc, so fabcheck predicts exactly what NCCL selects:
//  - a comma list of name prefixes; `name:port` restricts an HCA entry to one port;
//  - a leading `^` makes the whole list an exclude list; then a leading `=` makes every entry an
//    exact name. `^=eth0` excludes eth0 only; `=^eth0` is NOT an exclude list: NCCL drops the `^`
//    and keeps eth0 only;
//  - without `=`, an entry is a prefix: `mlx5_1` also matches mlx5_10..mlx5_19.
// Pure: no I/O. NCCL does no validation at all, so every surprise is returned in `issues`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fabkit::probes {

// NCCL's array sizes: MAX_IFS (socket.h) and MAX_IB_DEVS (net_ib.cc); entries past them are
// silently dropped. Names are copied into char prefix[64] without a bound check.
inline constexpr size_t kNcclMaxSocketEntries = 16;
inline constexpr size_t kNcclMaxHcaEntries = 32;
inline constexpr size_t kNcclMaxPrefixChars = 63;

struct NcclListEntry {
  std::string prefix;
  int port = -1;  // -1: any port (no `:port` given)
};

struct NcclList {
  std::string text;      // as given
  bool exclude = false;  // leading `^`
  bool exact = false;    // leading `=` (after the optional `^`)
  std::vector<NcclListEntry> entries;
  std::vector<std::string> issues;  // what NCCL silently does differently than it reads
};

NcclList parse_nccl_list(const std::string& text, size_t max_entries);

// One entry against one device name (and port; -1 on either side matches any port).
bool nccl_entry_matches(const NcclListEntry& e, bool exact, const std::string& name, int port);
// NCCL's selection: true when the device is used. An empty list selects everything (NCCL's
// "no user list" exception).
bool nccl_list_selects(const NcclList& list, const std::string& name, int port = -1);

// Names (in the given order) the list selects.
std::vector<std::string> nccl_list_select(const NcclList& list, const std::vector<std::string>& names);

// A prefix entry that matches more than one device: `mlx5_1` with mlx5_1 and mlx5_10 present.
// `names_one_device` is the likely mistake: the entry is one device's full name yet also catches
// others ("mlx5_1" -> mlx5_1, mlx5_10); "mlx5" catching all mlx5 devices is deliberate.
struct NcclListAmbiguity {
  std::string entry;  // "mlx5_1" or "mlx5_1:1"
  std::vector<std::string> matched;
  bool names_one_device = false;
};
std::vector<NcclListAmbiguity> nccl_list_ambiguities(const NcclList& list,
                                                     const std::vector<std::string>& names);
// Entries that match no device at all.
std::vector<std::string> nccl_list_unmatched(const NcclList& list,
                                             const std::vector<std::string>& names);

std::string to_string(const NcclListEntry& e);  // "mlx5_1" or "mlx5_1:1"

}  // namespace fabkit::probes
