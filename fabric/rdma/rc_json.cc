#include <stdexcept>

#include "fabric/rdma/rc_types.h"

namespace fabkit::fabric::rdma {
namespace {

template <typename T>
T number(const Json& j, const char* key, T max) {
  if (!j.contains(key) || !j[key].is_number_integer())
    throw std::invalid_argument(std::string("RC endpoint: field '") + key + "' missing or not an integer");
  auto v = j[key].get<int64_t>();
  if (v < -1 || v > static_cast<int64_t>(max))
    throw std::invalid_argument(std::string("RC endpoint: field '") + key + "' = " +
                                std::to_string(v) + " out of range");
  return static_cast<T>(v);
}

std::string text(const Json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_string())
    throw std::invalid_argument(std::string("RC endpoint: field '") + key + "' missing or not a string");
  return j[key].get<std::string>();
}

}  // namespace

Json to_json(const RcEndpointInfo& e) {
  return {{"lid", e.lid},   {"qpn", e.qpn},   {"psn", e.psn},
          {"gid", verbs::format_gid(e.gid)}, {"gid_index", e.gid_index},
          {"mtu", e.mtu},   {"rkey", e.rkey}, {"addr", e.addr},
          {"link_layer", e.link_layer}, {"gid_type", e.gid_type}, {"device", e.device}};
}

RcEndpointInfo endpoint_from_json(const Json& j) {
  if (!j.is_object()) throw std::invalid_argument("RC endpoint: expected a JSON object");
  RcEndpointInfo e;
  e.lid = number<uint16_t>(j, "lid", 0xffff);
  e.qpn = number<uint32_t>(j, "qpn", 0xffffff);
  e.psn = number<uint32_t>(j, "psn", 0xffffff);
  e.gid_index = number<int>(j, "gid_index", 0xffff);
  e.mtu = number<int>(j, "mtu", 4096);
  e.rkey = number<uint32_t>(j, "rkey", 0xffffffffu);
  if (!j.contains("addr") || !j["addr"].is_number_unsigned())
    throw std::invalid_argument("RC endpoint: field 'addr' missing or not an unsigned integer");
  e.addr = j["addr"].get<uint64_t>();
  std::string gid = text(j, "gid");
  auto g = verbs::parse_gid(gid);
  if (!g) throw std::invalid_argument("RC endpoint: field 'gid' = '" + gid + "' is not a GID");
  e.gid = *g;
  e.link_layer = text(j, "link_layer");
  if (e.link_layer != "InfiniBand" && e.link_layer != "Ethernet")
    throw std::invalid_argument("RC endpoint: field 'link_layer' = '" + e.link_layer +
                                "' (expected InfiniBand or Ethernet)");
  e.gid_type = text(j, "gid_type");
  e.device = text(j, "device");
  return e;
}

Json to_json(const RcTestResult& r) {
  auto opt = [](const auto& o) { return o ? Json(*o) : Json(nullptr); };
  Json diags = Json::array();
  for (const auto& f : r.diagnoses) diags.push_back(fabkit::to_json(f));
  return {{"status", r.status}, {"reason", r.reason}, {"diagnoses", diags},
          {"path_mtu", r.path_mtu}, {"bytes", r.bytes}, {"iters", r.iters},
          {"bw_gbps", opt(r.bw_gbps)}, {"lat_us_median", opt(r.lat_us_median)},
          {"lat_us_p99", opt(r.lat_us_p99)},
          {"lat_histogram", r.lat_histogram ? fabkit::to_json(*r.lat_histogram) : Json()},
          {"data_verified", opt(r.data_verified)}};
}

}  // namespace fabkit::fabric::rdma
