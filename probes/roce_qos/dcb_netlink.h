// The kernel's DCB netlink interface (net/dcb/dcbnl.c) as bytes: the RTM_GETDCB requests the gather
// sends and the parser of the replies, plus the inverse (replies built from a DcbState) that the
// fixture replay answers with. Written by hand rather than with libmnl: it is one request and one
// reply of flat and once-nested attributes, and the GPU machines build without Debian packages.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probes/roce_qos/roce_qos_facts.h"

namespace fabkit::probes {

// RTM_GETDCB with `cmd` (DCB_CMD_IEEE_GET, DCB_CMD_PFC_GCFG, DCB_CMD_GDCBX) for `ifname`.
std::vector<uint8_t> build_dcb_request(uint8_t cmd, const std::string& ifname, uint32_t seq);

// What a reply said. kernel_errno > 0: the kernel answered NLMSG_ERROR with that errno
// (EOPNOTSUPP: the driver has no DCB operations). malformed non-empty: not a DCB reply.
struct DcbReplyStatus {
  int kernel_errno = 0;
  std::string malformed;
};
// Merges what the reply to `cmd` carries into `out` (PFC, ETS, APP table, DCBX bits).
DcbReplyStatus parse_dcb_reply(const std::vector<uint8_t>& bytes, uint8_t cmd, uint32_t seq,
                               DcbState& out);

// The kernel's side, for the replay and the tests: the reply the kernel would send for `cmd` with
// `state`'s values (dcbnl_ieee_fill, dcbnl_getpfccfg, dcbnl_getdcbx), and an NLMSG_ERROR.
std::vector<uint8_t> build_dcb_reply(uint8_t cmd, const std::string& ifname, uint32_t seq,
                                     const DcbState& state);
std::vector<uint8_t> build_netlink_error(int err, uint32_t seq);
// The ifname and command of a request (what the replay needs to answer it); false if malformed.
bool parse_dcb_request(const std::vector<uint8_t>& bytes, uint8_t& cmd, std::string& ifname,
                       uint32_t& seq);

}  // namespace fabkit::probes
