// The three management datagrams the IB QoS probe exchanges with the fabric, encoded and decoded
// by byte offset (InfiniBand Architecture Specification vol. 1, ch. 13.4 MAD format, 14.2.5 SMP
// attributes, 15.2.5 SA PathRecord): SubnGet(PortInfo) and SubnGet(SLtoVLMappingTable) to the
// local port's SMA as directed-route SMPs with no hops, and SubnAdmGet(PathRecord) to the SA.
// By hand because libibmad's smp_query_via/sa_call do the I/O themselves: the replay
// (mad_replay.cc) must build the same reply bytes so the decoders run unchanged on recorded
// answers, and the decoders must be fuzzable on arbitrary bytes (fuzz/ib_qos_mad_fuzz.cc).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fabkit::probes {

constexpr size_t kMadSize = 256;
constexpr uint8_t kMgmtClassSmpDirected = 0x81;
constexpr uint8_t kMgmtClassSubnAdm = 0x03;
constexpr uint8_t kMethodGet = 0x01;
constexpr uint8_t kMethodGetResp = 0x81;
constexpr uint16_t kAttrPortInfo = 0x0015;
constexpr uint16_t kAttrSlToVlTable = 0x0017;
constexpr uint16_t kAttrPathRecord = 0x0035;

// The QoS fields of PortInfo (SMP data bytes, IBA table 146).
struct PortInfoQos {
  int lid = 0;
  int sm_lid = 0;
  int sm_sl = 0;       // MasterSMSL: the SL to reach the SM (and so the SA) with
  int port_state = 0;  // 1 Down, 2 Init, 3 Armed, 4 Active
  int vl_cap = 0;      // encoded: 1 VL0, 2 VL0-1, 3 VL0-3, 4 VL0-7, 5 VL0-14
  int oper_vls = 0;    // same encoding; 0 when the SM has not set it
};

// The fields of a PathRecord the probe uses (IBA table 210).
struct PathRecordQos {
  std::string sgid, dgid;  // "fe80::..." (inet_ntop)
  int slid = 0, dlid = 0;
  int sl = 0;
  int qos_class = 0;
  int mtu = 0;   // encoded (IBA): 1 256 .. 5 4096
  int rate = 0;  // encoded (IBA)
  int pkey = 0;
};

// How many data VLs an encoded VLCap/OperVLs means (0 for 0 and values above 5).
int data_vl_count(int encoded);
// "VL0-3" as smpquery prints it; "none" for 0, "reserved (N)" past 5.
std::string vls_text(int encoded);

// A GetResp's header and payload, or what was wrong with it.
struct MadReply {
  std::string malformed;               // non-empty: not a reply to the request (why)
  int status = 0;                      // MAD status (for a directed-route SMP without the D bit)
  std::array<uint8_t, 64> smp_data{};  // SMP data (64 bytes at offset 64)
  std::vector<uint8_t> sa_data;        // SA data (from offset 56)
};

std::vector<uint8_t> build_smp_get(uint16_t attr_id, uint32_t attr_mod, uint64_t tid);
// SubnAdmGet(PathRecord) for SGID -> DGID (component mask SGID|DGID, as libibmad's path query);
// GIDs as sysfs prints them ("fe80:0000:...") or compressed. Empty on an unparsable GID.
std::vector<uint8_t> build_path_record_get(const std::string& sgid, const std::string& dgid,
                                           uint64_t tid);
// Checks that `bytes` is the GetResp to a request with this class, attribute and TID.
MadReply parse_mad_reply(const std::vector<uint8_t>& bytes, uint8_t mgmt_class, uint16_t attr_id,
                         uint64_t tid);

PortInfoQos decode_port_info(const std::array<uint8_t, 64>& smp_data);
// SL -> VL, 16 entries (two SLs per byte, the lower SL in the high nibble).
std::array<int, 16> decode_sl2vl(const std::array<uint8_t, 64>& smp_data);
// nullopt when the SA data is shorter than a PathRecord (64 bytes).
std::optional<PathRecordQos> decode_path_record(const std::vector<uint8_t>& sa_data);

// What a request asks for (the replay answers by it): class, method, attribute, modifier, TID,
// and for a PathRecord the GIDs. False when the bytes are not a MAD request.
struct MadRequest {
  uint8_t mgmt_class = 0;
  uint8_t method = 0;
  uint16_t attr_id = 0;
  uint32_t attr_mod = 0;
  uint64_t tid = 0;
  std::string sgid, dgid;
};
bool parse_mad_request(const std::vector<uint8_t>& bytes, MadRequest& out);

// The replies an SMA and an SA build (the replay's side); status != 0 answers an error.
std::vector<uint8_t> build_smp_reply(const MadRequest& req, const std::array<uint8_t, 64>& data,
                                     int status);
std::vector<uint8_t> build_sa_reply(const MadRequest& req, const std::vector<uint8_t>& data,
                                    int status);
std::array<uint8_t, 64> encode_port_info(const PortInfoQos& p);
std::array<uint8_t, 64> encode_sl2vl(const std::array<int, 16>& sl2vl);
std::vector<uint8_t> encode_path_record(const PathRecordQos& p);

// "fe80::2:c903:f:9b01" <-> 16 bytes; false/"" when not a GID.
bool gid_from_text(const std::string& text, std::array<uint8_t, 16>& out);
std::string gid_to_text(const uint8_t* raw16);

}  // namespace fabkit::probes
