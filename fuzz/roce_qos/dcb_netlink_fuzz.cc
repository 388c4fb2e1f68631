// Any bytes as the kernel's reply to each RTM_GETDCB command the gather sends: parsed into a
// DcbState (or refused as malformed) and written as JSON without a crash; and as a request, the
// way the replay decodes one. Seed request-ifname-not-utf8 is the input that first stopped this
// target: the harness itself dumped the request's interface name as JSON.
#include <linux/dcbnl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "probes/roce_qos/dcb_netlink.h"
#include "probes/roce_qos/roce_qos_facts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabkit::probes;
  const std::vector<uint8_t> bytes(data, data + size);
  for (uint8_t cmd : {DCB_CMD_IEEE_GET, DCB_CMD_PFC_GCFG, DCB_CMD_GDCBX}) {
    RoceQosFacts f;
    RoceQosPort p;
    p.device = "mlx5_0";
    p.port = 1;
    p.netdev = "eth0";
    // The gather's sequence number is 1 for the first request; the fuzzer may hit it or not.
    DcbReplyStatus st = parse_dcb_reply(bytes, cmd, 1, p.dcb);
    p.dcb.status = st.malformed.empty() && st.kernel_errno == 0 ? "ok" : "error";
    p.dcb.detail = st.malformed;
    f.ports.push_back(p);
    judge_roce_qos(f);
    to_json(f).dump();
  }
  uint8_t cmd = 0;
  std::string ifname;
  uint32_t seq = 0;
  // The replay only looks the name up; it never reaches a report, so it is not dumped here.
  parse_dcb_request(bytes, cmd, ifname, seq);
  return 0;
}
