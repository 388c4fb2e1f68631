// Two questions about this host's network that several areas ask (fabcheck's net probe, fabtrain's
// Gloo comm), kept here so that asking them links no probe.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fabkit {

// getaddrinfo with a deadline (it has none of its own): the host's addresses, or nullopt and
// *err naming the host and the reason.
std::optional<std::vector<std::string>> resolve_bounded(const std::string& host, std::string* err);
// The local address the kernel's routing table picks toward `peer_ip` (a UDP connect sends
// nothing); nullopt when there is no route or peer_ip is not a literal address.
std::optional<std::string> route_source_address(const std::string& peer_ip);

}  // namespace fabkit
