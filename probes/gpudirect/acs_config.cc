#include "probes/gpudirect/acs_config.h"

namespace fabkit::probes {
namespace {

uint32_t le32(const std::string& b, size_t off) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[off])) |
         static_cast<uint32_t>(static_cast<unsigned char>(b[off + 1])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[off + 2])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[off + 3])) << 24;
}

uint16_t le16(const std::string& b, size_t off) {
  return static_cast<uint16_t>(static_cast<unsigned char>(b[off]) |
                               static_cast<unsigned char>(b[off + 1]) << 8);
}

}  // namespace

const char* to_string(AcsState s) {
  switch (s) {
    case AcsState::kUnknown:
      return "unknown";
    case AcsState::kNotPresent:
      return "not-present";
    case AcsState::kDisabled:
      return "disabled";
    case AcsState::kRedirecting:
      return "redirecting";
  }
  return "unknown";
}

AcsReading parse_acs_from_config(const std::string& config) {
  AcsReading r;
  if (config.size() < kPcieConfigSpaceBytes) {
    r.reason = "config space read returned " + std::to_string(config.size()) +
               " bytes, the extended capabilities start at 0x100 and need all 4096 (reading "
               "them needs root: run fabcheck as root, or `sudo lspci -vvv -s BDF | grep ACSCtl`)";
    return r;
  }
  size_t off = kPcieExtConfigStart;
  // Each header is 32 bits: id (15:0), version (19:16), next offset (31:20). The walk is bounded:
  // 4 KiB holds at most 960 dword-aligned headers, and a looping list must not hang us.
  for (int steps = 0; steps < 960; ++steps) {
    uint32_t hdr = le32(config, off);
    if (hdr == 0 || hdr == 0xffffffffu) break;  // no extended capabilities / device gone
    if ((hdr & 0xffff) == kPcieExtCapAcs) {
      if (off + 8 > config.size()) break;
      r.offset = off;
      r.capability = le16(config, off + 4);
      r.control = le16(config, off + 6);
      r.state = (*r.control & kAcsP2pRedirectMask) ? AcsState::kRedirecting : AcsState::kDisabled;
      return r;
    }
    size_t next = hdr >> 20;
    next &= ~size_t{3};  // the two low bits are reserved
    if (next < kPcieExtConfigStart || next + 4 > config.size()) break;
    off = next;
  }
  r.state = AcsState::kNotPresent;
  return r;
}

}  // namespace fabkit::probes
