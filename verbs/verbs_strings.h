// Total to_string for every verbs enum (any code, including ones a newer driver may report,
// gives a string), the name+number form ibv_devinfo prints ("ACTIVE (4)"), the sysfs spellings,
// and link rates.
#pragma once

#include <optional>
#include <string>

#include "verbs/verbs_types.h"

namespace fabkit::verbs {

// Names as the kernel's sysfs files spell them ("ACTIVE", "LinkUp", "InfiniBand", "RoCE v2");
// unknown codes give "unknown (N)".
std::string to_string(PortState s);
std::string to_string(PhysState s);
std::string to_string(LinkLayer l);  // Unspecified prints "InfiniBand", as rdma-core does:
                                     // drivers predating the field are all InfiniBand
std::string to_string(Mtu m);        // "4096"
std::string to_string(Speed s);      // "EDR"
std::string to_string(Width w);      // "4X"
std::string to_string(GidType t);    // "IB", "RoCE v1", "RoCE v2"

// Name and number: "ACTIVE (4)", "LinkUp (5)", "4096 (5)", "EDR (32)", "4X (2)".
// Unknown codes already carry their number: "unknown (9)".
template <typename E>
std::string describe(E e) {
  std::string name = to_string(e);
  if (name.rfind("unknown (", 0) == 0) return name;
  return name + " (" + std::to_string(static_cast<int>(e)) + ")";
}

int mtu_bytes(Mtu m);                            // 0 for an unknown code
std::optional<Mtu> mtu_from_bytes(int bytes);    // 256..4096 powers of two
int width_lanes(Width w);                        // 1, 4, 8, 12, 2; 0 unknown
// Per-lane signalling rate, Gb/s (IBTA: EDR 25.78125 = 25 Gb/s data with 64b/66b encoding).
double lane_signal_gbps(Speed s);                // 0 unknown
// Data rate as the kernel's sysfs `rate` file reports it: lanes x {2.5, 5, 10, 10, 14, 25, 50,
// 100, 200}; 0 for an unknown speed or width.
double rate_gbps(Speed s, Width w);
// The sysfs `rate` line: "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)".
std::string rate_string(Speed s, Width w);

// Parsers for sysfs spellings; nullopt when the text is not one of them.
std::optional<PortState> port_state_from_name(const std::string& name);  // "ACTIVE"
std::optional<PhysState> phys_state_from_name(const std::string& name);  // "LinkUp"
std::optional<LinkLayer> link_layer_from_name(const std::string& name);  // "Ethernet"
std::optional<GidType> gid_type_from_name(const std::string& name);      // "RoCE v2"

}  // namespace fabkit::verbs
