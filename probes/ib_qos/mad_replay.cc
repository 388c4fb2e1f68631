// The fabric's side of the IB QoS MADs, played from a fixture (--ib-qos-replay FILE and the
// tests): requests are decoded as an SMA or SA would, and answered with the reply bytes they
// would build (mad_codec.cc). The format is documented in tests/fixtures/ib_qos/README.md.
#include <map>
#include <stdexcept>

#include "common/errors.h"
#include "common/json_read.h"
#include "common/replay_file.h"
#include "probes/ib_qos/mad_codec.h"
#include "probes/ib_qos/mad_transport.h"

namespace fabkit::probes {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw std::invalid_argument(where + ": " + what);
}

struct ReplayPath {
  int sa_status = 0;  // non-zero: the SA answers this status
  PathRecordQos record;
};

struct ReplayPort {
  int smp_errno = 0;  // non-zero: every SMP fails with this errno (ETIMEDOUT: no answer)
  PortInfoQos port_info;
  std::array<int, 16> sl2vl{};
  int sa_errno = 0;                         // non-zero: every SA query fails with this errno
  std::map<std::string, ReplayPath> paths;  // by DGID ("*": any)
};

int integer(const Json& j, const std::string& where, int lo, int hi) {
  if (!j.is_number_integer() || j.get<int64_t>() < lo || j.get<int64_t>() > hi)
    bad(where, "expected an integer " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " +
                   j.dump());
  return j.get<int>();
}

// "VL0-7" as smpquery prints VLCap and OperVLs, or the encoded number.
int vls(const Json& j, const std::string& where) {
  if (j.is_number_integer()) return integer(j, where, 0, 15);
  if (j.is_string())
    for (int e = 0; e <= 5; ++e)
      if (vls_text(e) == j.get<std::string>()) return e;
  bad(where,
      "expected VL0, VL0-1, VL0-3, VL0-7, VL0-14 or none (as smpquery prints), got " + j.dump());
}

int errno_for(const std::string& where, const Json& j) {
  const std::string s = j.is_string() ? j.get<std::string>() : "";
  if (s == "timeout") return ETIMEDOUT;
  if (s == "no_device") return ENODEV;
  bad(where, "expected \"timeout\", \"no_device\" or an object, got " + j.dump());
}

int port_state(const Json& j, const std::string& where) {
  static const std::map<std::string, int> kStates = {
      {"Down", 1}, {"Initialize", 2}, {"Armed", 3}, {"Active", 4}};
  if (j.is_string() && kStates.count(j.get<std::string>())) return kStates.at(j.get<std::string>());
  return integer(j, where, 0, 15);
}

ReplayPort parse_port(const Json& j, const std::string& w) {
  if (!j.is_object()) bad(w, "expected an object");
  ReplayPort r;
  const Json smp = j.value("port_info", Json());
  if (smp.is_string()) {
    r.smp_errno = errno_for(w + ".port_info", smp);
  } else {
    if (!smp.is_object()) bad(w + ".port_info", "expected an object (smpquery portinfo fields)");
    r.port_info.lid = integer(smp.value("lid", Json(0)), w + ".port_info.lid", 0, 0xffff);
    r.port_info.sm_lid = integer(smp.value("sm_lid", Json(0)), w + ".port_info.sm_lid", 0, 0xffff);
    r.port_info.sm_sl = integer(smp.value("sm_sl", Json(0)), w + ".port_info.sm_sl", 0, 15);
    r.port_info.port_state = port_state(smp.value("state", Json("Active")), w + ".port_info.state");
    r.port_info.vl_cap = vls(smp.value("vl_cap", Json()), w + ".port_info.vl_cap");
    r.port_info.oper_vls = vls(smp.value("oper_vls", Json()), w + ".port_info.oper_vls");
    const Json t = j.value("sl2vl", Json());
    if (!t.is_array() || t.size() != 16)
      bad(w + ".sl2vl", "expected 16 VLs (SL 0..15), as smpquery sl2vl prints them");
    for (size_t sl = 0; sl < 16; ++sl)
      r.sl2vl[sl] = integer(t[sl], w + ".sl2vl[" + std::to_string(sl) + "]", 0, 15);
  }
  const Json sa = j.value("path_records", Json::object());
  if (sa.is_string()) {
    r.sa_errno = errno_for(w + ".path_records", sa);
  } else {
    if (!sa.is_object()) bad(w + ".path_records", "expected {\"<dgid>|*\": {...}}");
    for (const auto& [dgid, pr] : sa.items()) {
      const std::string wp = w + ".path_records." + dgid;
      ReplayPath p;
      if (!pr.is_object()) bad(wp, "expected an object (saquery -p fields)");
      if (pr.contains("sa_status")) {
        p.sa_status = integer(pr["sa_status"], wp + ".sa_status", 1, 0xffff);
      } else {
        p.record.sl = integer(pr.value("sl", Json()), wp + ".sl", 0, 15);
        p.record.qos_class = integer(pr.value("qos_class", Json(0)), wp + ".qos_class", 0, 4095);
        p.record.mtu = integer(pr.value("mtu", Json(5)), wp + ".mtu", 0, 63);
        p.record.rate = integer(pr.value("rate", Json(0)), wp + ".rate", 0, 63);
        p.record.pkey = integer(pr.value("pkey", Json(0xffff)), wp + ".pkey", 0, 0xffff);
        p.record.dlid = integer(pr.value("dlid", Json(0)), wp + ".dlid", 0, 0xffff);
        p.record.slid = integer(pr.value("slid", Json(0)), wp + ".slid", 0, 0xffff);
      }
      r.paths[dgid] = p;
    }
  }
  return r;
}

class ReplayMadTransport : public MadTransport {
 public:
  explicit ReplayMadTransport(std::map<std::string, ReplayPort> ports) : ports_(std::move(ports)) {}
  std::string unavailable() const override { return ""; }

  Expected<std::vector<uint8_t>> exchange(const std::string& device, int port,
                                          const MadDestination& to, const std::vector<uint8_t>& mad,
                                          int) override {
    const std::string object = device + ":" + std::to_string(port);
    auto it = ports_.find(object);
    if (it == ports_.end()) return SysError{"umad_open_port", ENODEV, object};
    const ReplayPort& p = it->second;
    MadRequest req;
    if (!parse_mad_request(mad, req)) return SysError{"umad_send", EINVAL, object};
    if (!to.to_sa) {
      if (p.smp_errno) return SysError{"umad_recv", p.smp_errno, object};
      if (req.attr_id == kAttrPortInfo)
        return build_smp_reply(req, encode_port_info(p.port_info), 0);
      if (req.attr_id == kAttrSlToVlTable) return build_smp_reply(req, encode_sl2vl(p.sl2vl), 0);
      return build_smp_reply(req, {}, 0x0c);  // unsupported attribute (IBA 13.4.7)
    }
    if (p.sa_errno) return SysError{"umad_recv", p.sa_errno, object};
    auto path = p.paths.find(req.dgid);
    if (path == p.paths.end()) path = p.paths.find("*");
    if (path == p.paths.end()) return build_sa_reply(req, {}, 3 << 8);  // ERR_NO_RECORDS
    if (path->second.sa_status) return build_sa_reply(req, {}, path->second.sa_status);
    PathRecordQos rec = path->second.record;
    rec.sgid = req.sgid;
    rec.dgid = req.dgid;
    return build_sa_reply(req, encode_path_record(rec), 0);
  }

 private:
  std::map<std::string, ReplayPort> ports_;
};

}  // namespace

std::unique_ptr<MadTransport> make_replay_mad_transport(const Json& fixture,
                                                        const std::string& what) {
  try {
    if (!fixture.is_object() || !fixture.contains("ports") || !fixture["ports"].is_object())
      bad("top level", "expected {\"ports\": {\"<device>:<port>\": {\"port_info\": ..., ...}}}");
    std::map<std::string, ReplayPort> ports;
    for (const auto& [name, p] : fixture["ports"].items()) {
      auto colon = name.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == name.size() ||
          name.find_first_not_of("0123456789", colon + 1) != std::string::npos)
        bad("ports." + name, "expected a key <device>:<port>, e.g. mlx5_0:1");
      ports.emplace(name, parse_port(p, "ports." + name));
    }
    return std::make_unique<ReplayMadTransport>(std::move(ports));
  } catch (const std::invalid_argument& e) {
    throw UsageError(what + ": " + e.what());
  } catch (const Json::exception& e) {
    throw UsageError(what + ": " + e.what());
  }
}

std::unique_ptr<MadTransport> load_replay_mad_transport(const std::filesystem::path& file) {
  const std::string what = "--ib-qos-replay " + file.string();
  const std::string fix = "; give a fixture in the format of tests/fixtures/ib_qos/README.md";
  const Json j = read_replay_json(what, file, 4u << 20, fix);
  try {
    return make_replay_mad_transport(j, what);
  } catch (const UsageError& e) {
    throw UsageError(e.what() + fix);
  }
}

}  // namespace fabkit::probes
