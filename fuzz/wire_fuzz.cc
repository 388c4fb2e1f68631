// libFuzzer target: the control-plane frame decoder and the message parsers, exactly as an agent
// applies them to bytes from the network (decode -> parse request/response/error -> the agent's
// argument validation and target extraction; the controller's progress notes), and the
// controller's checks of an agent's tcp_measure and rdma_rc answers (the latency histograms,
// common/latency_histogram.h). The handshake frames have their own target. Anything but a
// WireError, or the histogram check's invalid_argument, escaping is a bug.
#include <cstddef>
#include <cstdint>

#include <algorithm>
#include <stdexcept>

#include "common/latency_histogram.h"
#include "fabric/agent/agent_requests.h"
#include "fabric/wire/frame.h"
#include "fabric/wire/messages.h"
#include "fabric/wire/wire_error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabkit::wire;
  // A small cap so oversize handling is exercised too; the first byte picks chunking.
  FrameDecoder d(size > 0 && (data[0] & 1) ? 4096 : kMaxControlFrameBytes);
  size_t step = size > 0 ? 1 + data[0] % 7 : 1;
  try {
    for (size_t off = 0; off < size; off += step) {
      d.feed(reinterpret_cast<const char*>(data) + off, std::min(step, size - off));
      while (auto f = d.next()) {
        try {
          switch (f->type) {
            case FrameType::kHello:
            case FrameType::kAuth: parse_json_payload(*f); break;
            case FrameType::kRequest: {
              Request r = parse_request(*f);
              fabkit::agent::validate_request(r);
              fabkit::agent::request_targets(r);
              break;
            }
            case FrameType::kResponse: {
              Response r = parse_response(*f);
              const fabkit::Json& res = r.result;
              if (res.contains("rtt") && res["rtt"].is_object() &&
                  res["rtt"].contains("histogram")) {
                const fabkit::Json& rtt = res["rtt"];
                int64_t want = rtt.contains("count") && rtt["count"].is_number_integer()
                                   ? rtt["count"].get<int64_t>()
                                   : -1;
                try {
                  fabkit::histogram_from_json(rtt["histogram"], "rtt.histogram", want);
                } catch (const std::invalid_argument&) {
                }
              }
              if (res.contains("lat_histogram")) {  // an rdma_rc send_lat answer
                try {
                  fabkit::histogram_from_json(res["lat_histogram"], "lat_histogram", 1000);
                } catch (const std::invalid_argument&) {
                }
              }
              break;
            }
            case FrameType::kError: parse_error(*f); break;
            case FrameType::kProgress: parse_progress(*f); break;
            case FrameType::kHeartbeat: parse_heartbeat(*f); break;
            case FrameType::kBye: break;
          }
        } catch (const WireError&) {
        }
      }
    }
    d.finish();
  } catch (const WireError&) {
  }
  return 0;
}
