#include "probes/ib_qos/mad_codec.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace fabkit::probes {
namespace {

// MAD common header (IBA 13.4.2): every offset below is from the start of the 256-byte MAD.
constexpr size_t kOffBaseVersion = 0, kOffMgmtClass = 1, kOffClassVersion = 2, kOffMethod = 3,
                 kOffStatus = 4, kOffHopPointer = 6, kOffHopCount = 7, kOffTid = 8, kOffAttrId = 16,
                 kOffAttrMod = 20;
// Directed-route SMP (IBA 14.2.1.2): M_Key, DrSLID, DrDLID, then the data at 64.
constexpr size_t kOffDrSlid = 32, kOffDrDlid = 34, kOffSmpData = 64;
// SA MAD (IBA 15.2.1.1): RMPP header 24..35, SM_Key 36, AttributeOffset 44, ComponentMask 48,
// data at 56.
constexpr size_t kOffSaCompMask = 48, kOffSaData = 56;
constexpr size_t kPathRecordSize = 64;
// PathRecord component mask bits (IBA table 210 order): DGID is component 2, SGID 3.
constexpr uint64_t kPrCompDgid = 1ull << 2, kPrCompSgid = 1ull << 3;
// The directed-route D bit: set in replies (IBA 14.2.1.2).
constexpr uint16_t kDrDirection = 0x8000;
constexpr uint16_t kPermissiveLid = 0xffff;

void put16(std::vector<uint8_t>& b, size_t off, uint16_t v) {
  b[off] = static_cast<uint8_t>(v >> 8);
  b[off + 1] = static_cast<uint8_t>(v);
}
void put32(std::vector<uint8_t>& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
void put64(std::vector<uint8_t>& b, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[off + i] = static_cast<uint8_t>(v >> (56 - 8 * i));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | p[3];
}
uint64_t get64(const uint8_t* p) { return static_cast<uint64_t>(get32(p)) << 32 | get32(p + 4); }

std::vector<uint8_t> header(uint8_t mgmt_class, uint8_t class_version, uint8_t method,
                            uint16_t attr_id, uint32_t attr_mod, uint64_t tid) {
  std::vector<uint8_t> b(kMadSize, 0);
  b[kOffBaseVersion] = 1;
  b[kOffMgmtClass] = mgmt_class;
  b[kOffClassVersion] = class_version;
  b[kOffMethod] = method;
  put64(b, kOffTid, tid);
  put16(b, kOffAttrId, attr_id);
  put32(b, kOffAttrMod, attr_mod);
  return b;
}

std::string hex16(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04x", v & 0xffff);
  return buf;
}

}  // namespace

int data_vl_count(int e) {
  switch (e) {
    case 1:
      return 1;
    case 2:
      return 2;
    case 3:
      return 4;
    case 4:
      return 8;
    case 5:
      return 15;
    default:
      return 0;
  }
}

std::string vls_text(int e) {
  if (e == 0) return "none";
  if (e > 5) return "reserved (" + std::to_string(e) + ")";
  return e == 1 ? "VL0" : "VL0-" + std::to_string(data_vl_count(e) - 1);
}

bool gid_from_text(const std::string& text, std::array<uint8_t, 16>& out) {
  if (text.size() >= INET6_ADDRSTRLEN) return false;
  return inet_pton(AF_INET6, text.c_str(), out.data()) == 1;
}

std::string gid_to_text(const uint8_t* raw16) {
  char buf[INET6_ADDRSTRLEN];
  if (!inet_ntop(AF_INET6, raw16, buf, sizeof buf)) return "";
  return buf;
}

std::vector<uint8_t> build_smp_get(uint16_t attr_id, uint32_t attr_mod, uint64_t tid) {
  std::vector<uint8_t> b = header(kMgmtClassSmpDirected, 1, kMethodGet, attr_id, attr_mod, tid);
  // No hops: the local port's own SMA answers, with or without a subnet manager.
  b[kOffHopPointer] = 0;
  b[kOffHopCount] = 0;
  put16(b, kOffDrSlid, kPermissiveLid);
  put16(b, kOffDrDlid, kPermissiveLid);
  return b;
}

std::vector<uint8_t> build_path_record_get(const std::string& sgid, const std::string& dgid,
                                           uint64_t tid) {
  std::array<uint8_t, 16> s{}, d{};
  if (!gid_from_text(sgid, s) || !gid_from_text(dgid, d)) return {};
  std::vector<uint8_t> b = header(kMgmtClassSubnAdm, 2, kMethodGet, kAttrPathRecord, 0, tid);
  put64(b, kOffSaCompMask, kPrCompDgid | kPrCompSgid);
  std::memcpy(&b[kOffSaData + 8], d.data(), 16);
  std::memcpy(&b[kOffSaData + 24], s.data(), 16);
  return b;
}

MadReply parse_mad_reply(const std::vector<uint8_t>& bytes, uint8_t mgmt_class, uint16_t attr_id,
                         uint64_t tid) {
  MadReply r;
  if (bytes.size() < kMadSize) {
    r.malformed = std::to_string(bytes.size()) + " bytes, a MAD has " + std::to_string(kMadSize);
    return r;
  }
  const uint8_t* b = bytes.data();
  if (b[kOffBaseVersion] != 1)
    r.malformed = "base version " + std::to_string(b[kOffBaseVersion]) + ", expected 1";
  else if (b[kOffMgmtClass] != mgmt_class)
    r.malformed = "management class " + hex16(b[kOffMgmtClass]) + ", expected " + hex16(mgmt_class);
  else if (b[kOffMethod] != kMethodGetResp)
    r.malformed = "method " + hex16(b[kOffMethod]) + ", expected GetResp (0x81)";
  else if (get16(b + kOffAttrId) != attr_id)
    r.malformed = "attribute " + hex16(get16(b + kOffAttrId)) + ", expected " + hex16(attr_id);
  // The kernel owns the TID's upper 32 bits (the agent id): compare the lower half.
  else if (static_cast<uint32_t>(get64(b + kOffTid)) != static_cast<uint32_t>(tid))
    r.malformed = "transaction id does not match the request's";
  if (!r.malformed.empty()) return r;
  uint16_t status = get16(b + kOffStatus);
  if (mgmt_class == kMgmtClassSmpDirected) {
    status &= static_cast<uint16_t>(~kDrDirection);
    std::memcpy(r.smp_data.data(), b + kOffSmpData, r.smp_data.size());
  } else {
    r.sa_data.assign(b + kOffSaData, b + kMadSize);
  }
  r.status = status;
  return r;
}

PortInfoQos decode_port_info(const std::array<uint8_t, 64>& d) {
  PortInfoQos p;
  p.lid = get16(&d[16]);
  p.sm_lid = get16(&d[18]);
  p.port_state = d[32] & 0x0f;
  p.sm_sl = d[36] & 0x0f;
  p.vl_cap = d[37] >> 4;
  p.oper_vls = d[43] >> 4;
  return p;
}

std::array<int, 16> decode_sl2vl(const std::array<uint8_t, 64>& d) {
  std::array<int, 16> out{};
  for (int sl = 0; sl < 16; ++sl) out[sl] = sl % 2 ? d[sl / 2] & 0x0f : d[sl / 2] >> 4;
  return out;
}

std::optional<PathRecordQos> decode_path_record(const std::vector<uint8_t>& d) {
  if (d.size() < kPathRecordSize) return std::nullopt;
  PathRecordQos p;
  p.dgid = gid_to_text(&d[8]);
  p.sgid = gid_to_text(&d[24]);
  p.dlid = get16(&d[40]);
  p.slid = get16(&d[42]);
  p.pkey = get16(&d[50]);
  p.qos_class = get16(&d[52]) >> 4;
  p.sl = d[53] & 0x0f;
  p.mtu = d[54] & 0x3f;
  p.rate = d[55] & 0x3f;
  return p;
}

bool parse_mad_request(const std::vector<uint8_t>& bytes, MadRequest& out) {
  if (bytes.size() < kMadSize || bytes[kOffBaseVersion] != 1) return false;
  const uint8_t* b = bytes.data();
  out.mgmt_class = b[kOffMgmtClass];
  out.method = b[kOffMethod];
  out.attr_id = get16(b + kOffAttrId);
  out.attr_mod = get32(b + kOffAttrMod);
  out.tid = get64(b + kOffTid);
  if (out.mgmt_class == kMgmtClassSubnAdm && out.attr_id == kAttrPathRecord) {
    out.dgid = gid_to_text(b + kOffSaData + 8);
    out.sgid = gid_to_text(b + kOffSaData + 24);
  }
  return true;
}

std::vector<uint8_t> build_smp_reply(const MadRequest& req, const std::array<uint8_t, 64>& data,
                                     int status) {
  std::vector<uint8_t> b =
      header(kMgmtClassSmpDirected, 1, kMethodGetResp, req.attr_id, req.attr_mod, req.tid);
  put16(b, kOffStatus, static_cast<uint16_t>(kDrDirection | (status & 0x7fff)));
  put16(b, kOffDrSlid, kPermissiveLid);
  put16(b, kOffDrDlid, kPermissiveLid);
  std::memcpy(&b[kOffSmpData], data.data(), data.size());
  return b;
}

std::vector<uint8_t> build_sa_reply(const MadRequest& req, const std::vector<uint8_t>& data,
                                    int status) {
  std::vector<uint8_t> b =
      header(kMgmtClassSubnAdm, 2, kMethodGetResp, req.attr_id, req.attr_mod, req.tid);
  put16(b, kOffStatus, static_cast<uint16_t>(status));
  // std::copy_n, not memcpy: an error reply carries no record, and memcpy from an empty vector's
  // data() (null) is undefined even for zero bytes.
  std::copy_n(data.begin(), std::min(data.size(), kMadSize - kOffSaData),
              b.begin() + static_cast<std::ptrdiff_t>(kOffSaData));
  return b;
}

std::array<uint8_t, 64> encode_port_info(const PortInfoQos& p) {
  std::array<uint8_t, 64> d{};
  d[16] = static_cast<uint8_t>(p.lid >> 8);
  d[17] = static_cast<uint8_t>(p.lid);
  d[18] = static_cast<uint8_t>(p.sm_lid >> 8);
  d[19] = static_cast<uint8_t>(p.sm_lid);
  d[32] = static_cast<uint8_t>(p.port_state & 0x0f);
  d[36] = static_cast<uint8_t>(p.sm_sl & 0x0f);
  d[37] = static_cast<uint8_t>((p.vl_cap & 0x0f) << 4);
  d[43] = static_cast<uint8_t>((p.oper_vls & 0x0f) << 4);
  return d;
}

std::array<uint8_t, 64> encode_sl2vl(const std::array<int, 16>& t) {
  std::array<uint8_t, 64> d{};
  for (int sl = 0; sl < 16; ++sl)
    d[sl / 2] |= static_cast<uint8_t>(sl % 2 ? t[sl] & 0x0f : (t[sl] & 0x0f) << 4);
  return d;
}

std::vector<uint8_t> encode_path_record(const PathRecordQos& p) {
  std::vector<uint8_t> d(kPathRecordSize, 0);
  std::array<uint8_t, 16> g{};
  if (gid_from_text(p.dgid, g)) std::memcpy(&d[8], g.data(), 16);
  if (gid_from_text(p.sgid, g)) std::memcpy(&d[24], g.data(), 16);
  put16(d, 40, static_cast<uint16_t>(p.dlid));
  put16(d, 42, static_cast<uint16_t>(p.slid));
  put16(d, 50, static_cast<uint16_t>(p.pkey));
  put16(d, 52, static_cast<uint16_t>(p.qos_class << 4 | (p.sl & 0x0f)));
  d[54] = static_cast<uint8_t>(0x80 | (p.mtu & 0x3f));  // selector 2: exactly
  d[55] = static_cast<uint8_t>(0x80 | (p.rate & 0x3f));
  return d;
}

}  // namespace fabkit::probes
