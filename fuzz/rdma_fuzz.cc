// Any bytes: a peer's endpoint frame or a fixture must give a value or std::invalid_argument,
// never a crash; the sysfs parsers must accept or refuse.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/json_read.h"
#include "fabric/rdma/rc_types.h"
#include "probes/rdma/rdma_facts.h"
#include "verbs/fake_verbs_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  fabkit::probes::parse_sysfs_coded(text);
  fabkit::probes::parse_sysfs_rate_gbps(text);
  fabkit::verbs::parse_gid(text);
  fabkit::Json j;
  try {
    j = fabkit::parse_json(text, "fuzz input");
  } catch (const fabkit::JsonReadError&) {
    return 0;
  }
  try {
    fabkit::fabric::rdma::endpoint_from_json(j);
  } catch (const std::invalid_argument&) {
  }
  try {
    fabkit::verbs::load_fake_devices(j);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
