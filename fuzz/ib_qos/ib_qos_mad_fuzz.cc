// Any bytes as the fabric's reply to each MAD the IB QoS gather sends (PortInfo, SLtoVL,
// PathRecord) and as a request the replay decodes; and, when they parse as JSON, as an
// --ib-qos-replay file driving the whole gather of one port. Nothing may crash; JSON output must be
// writable.
#include <cstdint>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/json.h"
#include "common/json_read.h"
#include "probes/ib_qos/ib_qos_facts.h"
#include "probes/ib_qos/mad_codec.h"
#include "probes/ib_qos/mad_transport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabkit::probes;
  const std::vector<uint8_t> bytes(data, data + size);
  IbQosFacts f;
  IbQosPort p;
  p.device = "mlx5_0";
  p.port = 1;
  p.active = true;
  p.status = "ok";
  MadReply r = parse_mad_reply(bytes, kMgmtClassSmpDirected, kAttrPortInfo, 1);
  p.port_info = decode_port_info(r.smp_data);
  r = parse_mad_reply(bytes, kMgmtClassSmpDirected, kAttrSlToVlTable, 1);
  p.sl2vl = decode_sl2vl(r.smp_data);
  r = parse_mad_reply(bytes, kMgmtClassSubnAdm, kAttrPathRecord, 1);
  IbPathQuery q;
  q.status = "ok";
  q.record = decode_path_record(r.sa_data);
  p.paths.push_back(q);
  f.ports.push_back(p);
  judge_ib_qos(f);
  to_json(f).dump();
  MadRequest req;
  if (parse_mad_request(bytes, req)) fabkit::Json(req.sgid + req.dgid).dump();

  fabkit::Json j;
  try {
    // The reader the replay's loader uses (depth-limited), as --*-replay FILE reads it.
    j = fabkit::parse_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const fabkit::JsonReadError&) {
    return 0;
  }
  try {
    auto t = make_replay_mad_transport(j, "fuzz.json");
    IbQosFacts g;
    for (const auto& [name, unused] : j["ports"].items()) {
      IbQosPort port;
      port.device = name.substr(0, name.rfind(':'));
      port.port = std::atoi(name.substr(name.rfind(':') + 1).c_str());
      port.active = true;
      port.gid = "fe80::1";
      read_ib_port_qos(*t, port, "fe80::2");
      g.ports.push_back(port);
    }
    judge_ib_qos(g);
    to_json(g).dump();
  } catch (const fabkit::UsageError&) {
  }
  return 0;
}
