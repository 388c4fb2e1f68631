// Any bytes as a --qos-replay file: refused with UsageError naming the field, or replayed through
// the DCB netlink and ethtool parsers for every netdev it names, judged and written as JSON.
#include <cstdint>
#include <string>

#include "common/errors.h"
#include "common/json.h"
#include "common/json_read.h"
#include "probes/roce_qos/qos_kernel.h"
#include "probes/roce_qos/roce_qos_facts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fabkit::probes;
  fabkit::Json j;
  try {
    // The reader the replay's loader uses (depth-limited), as --*-replay FILE reads it.
    j = fabkit::parse_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const fabkit::JsonReadError&) {
    return 0;
  }
  std::unique_ptr<QosKernel> kernel;
  try {
    kernel = make_replay_qos_kernel(j, "fuzz.json");
  } catch (const fabkit::UsageError&) {
    return 0;
  }
  RoceQosFacts f;
  for (const auto& [name, unused] : j["netdevs"].items()) {
    RoceQosPort p;
    p.device = "mlx5_0";
    p.port = 1;
    p.netdev = name;
    p.dcb = read_dcb(*kernel, name);
    p.ethtool = read_ethtool_counters(*kernel, name);
    reread_ethtool_counters(*kernel, name, p.ethtool);
    f.ports.push_back(p);
  }
  f.counter_interval_ms = kernel->recorded_interval_ms().value_or(0);
  judge_roce_qos(f);
  to_json(f).dump();
  return 0;
}
