// Reads the fake's fixture: `ibv_devinfo -v` fields as JSON keys with the values as ibv_devinfo
// prints them ("PORT_ACTIVE (4)", "4096 (5)", "50.0 Gbps (64)", "GID[  3]:  ::ffff:10.0.0.5,
// RoCE v2"). The number in parentheses is the verbs code and is what counts.
#include <cerrno>
#include <stdexcept>

#include "common/file_reader.h"
#include "verbs/fake_verbs_api.h"
#include "verbs/verbs_strings.h"

namespace fabkit::verbs {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw std::invalid_argument("fake verbs fixture: " + where + ": " + what);
}

const Json& field(const Json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key)) bad(where, std::string("missing field '") + key + "'");
  return obj.at(key);
}

std::string text(const Json& obj, const char* key, const std::string& where) {
  const Json& v = field(obj, key, where);
  if (!v.is_string()) bad(where, std::string("field '") + key + "' must be a string");
  return v.get<std::string>();
}

int number(const Json& obj, const char* key, const std::string& where) {
  const Json& v = field(obj, key, where);
  if (!v.is_number_integer()) bad(where, std::string("field '") + key + "' must be an integer");
  return v.get<int>();
}

int coded(const Json& obj, const char* key, const std::string& where) {
  return devinfo_code(text(obj, key, where), where + " " + key);
}

// "GID[  3]:\t\t::ffff:10.0.0.5, RoCE v2" (RoCE ports) or "GID[  0]:\t\tfe80:...:5b3e" (IB).
GidEntry parse_gid_line(const std::string& line, LinkLayer ll, const std::string& where) {
  auto open = line.find('['), close = line.find("]:");
  if (!starts_with(line, "GID[") || close == std::string::npos)
    bad(where, "GID line '" + line + "' is not 'GID[ N]: <gid>[, <type>]'");
  GidEntry e;
  try {
    e.index = std::stoi(line.substr(open + 1, close - open - 1));
  } catch (const std::exception&) {
    bad(where, "GID line '" + line + "' has no index");
  }
  std::string rest = trim(line.substr(close + 2));
  std::string type_text;
  if (auto comma = rest.find(", "); comma != std::string::npos) {
    type_text = trim(rest.substr(comma + 2));
    rest = trim(rest.substr(0, comma));
  }
  auto gid = parse_gid(rest);
  if (!gid) bad(where, "GID '" + rest + "' is not an IPv6-form GID");
  e.gid = *gid;
  if (type_text.empty()) {
    e.type = ll == LinkLayer::kEthernet ? GidType::kRoceV1 : GidType::kIb;
  } else {
    auto t = gid_type_from_name(type_text);
    if (!t) bad(where, "GID type '" + type_text + "' (expected 'RoCE v1' or 'RoCE v2')");
    e.type = *t;
  }
  return e;
}

FakePort parse_port(const Json& j, const std::string& dev) {
  std::string where = dev + " port " + (j.contains("port") ? j["port"].dump() : "?");
  FakePort p;
  p.port = number(j, "port", where);
  PortAttr& a = p.attr;
  a.state = static_cast<PortState>(coded(j, "state", where));
  a.phys_state = static_cast<PhysState>(coded(j, "phys_state", where));
  a.max_mtu = static_cast<Mtu>(coded(j, "max_mtu", where));
  a.active_mtu = static_cast<Mtu>(coded(j, "active_mtu", where));
  a.active_width = static_cast<Width>(coded(j, "active_width", where));
  a.active_speed = static_cast<Speed>(coded(j, "active_speed", where));
  auto ll = link_layer_from_name(text(j, "link_layer", where));
  if (!ll) bad(where, "link_layer must be InfiniBand or Ethernet");
  a.link_layer = *ll;
  a.lid = static_cast<uint16_t>(number(j, "port_lid", where));
  a.sm_lid = static_cast<uint16_t>(number(j, "sm_lid", where));
  a.gid_tbl_len = number(j, "gid_tbl_len", where);
  const Json& lines = field(j, "GID", where);
  if (!lines.is_array()) bad(where, "GID must be an array of ibv_devinfo GID lines");
  const Json ndevs = j.value("gid_ndevs", Json::object());
  for (const auto& l : lines) {
    if (!l.is_string()) bad(where, "GID entries must be strings");
    GidEntry e = parse_gid_line(l.get<std::string>(), a.link_layer, where);
    if (e.index >= a.gid_tbl_len) bad(where, "GID index " + std::to_string(e.index) + " >= gid_tbl_len");
    std::string key = std::to_string(e.index);
    if (ndevs.is_object() && ndevs.contains(key)) {
      if (!ndevs[key].is_string()) bad(where, "gid_ndevs." + key + " must be a string");
      e.netdev = ndevs[key].get<std::string>();
    }
    p.gids.push_back(e);
  }
  return p;
}

}  // namespace

int devinfo_code(const std::string& t, const std::string& where) {
  auto open = t.rfind('('), close = t.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open + 2)
    bad(where, "value '" + t + "' has no '(N)' code as ibv_devinfo prints it");
  try {
    return std::stoi(t.substr(open + 1, close - open - 1), nullptr, 0);
  } catch (const std::exception&) {
    bad(where, "value '" + t + "' has a non-numeric code");
  }
}

std::vector<FakeDevice> load_fake_devices(const Json& fixture) {
  const Json& devs = field(fixture, "devices", "top level");
  if (!devs.is_array()) bad("top level", "'devices' must be an array");
  std::vector<FakeDevice> out;
  for (const auto& d : devs) {
    FakeDevice fd;
    fd.attr.name = text(d, "hca_id", "device");
    const std::string& where = fd.attr.name;
    fd.attr.fw_ver = text(d, "fw_ver", where);
    fd.attr.node_guid = text(d, "node_guid", where);
    fd.attr.phys_port_cnt = number(d, "phys_port_cnt", where);
    const Json& ports = field(d, "ports", where);
    for (const auto& p : ports) fd.ports.push_back(parse_port(p, where));
    if (static_cast<int>(fd.ports.size()) != fd.attr.phys_port_cnt)
      bad(where, "phys_port_cnt " + std::to_string(fd.attr.phys_port_cnt) + " but " +
                     std::to_string(fd.ports.size()) + " ports listed");
    out.push_back(std::move(fd));
  }
  return out;
}

}  // namespace fabkit::verbs
