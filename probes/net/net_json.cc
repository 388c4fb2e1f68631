#include "probes/net/net_facts.h"

namespace fabkit::probes {
namespace {

Json opt_str(const std::optional<std::string>& s) { return s ? Json(*s) : Json(nullptr); }

}  // namespace

Json to_json(const NetFacts& f) {
  Json j;
  j["source"] = f.source;
  j["addresses_known"] = f.addresses_known;
  j["interfaces_known"] = f.interfaces_known;
  j["interfaces"] = Json::array();
  for (const auto& i : f.interfaces) {
    Json ji;
    ji["name"] = i.name;
    ji["ifindex"] = i.ifindex;
    ji["operstate"] = i.operstate;
    ji["running"] = i.running;
    ji["up"] = i.up;
    ji["mtu"] = i.mtu ? Json(*i.mtu) : Json(nullptr);
    ji["speed_mbps"] = i.speed_mbps ? Json(*i.speed_mbps) : Json(nullptr);
    ji["virtual"] = i.is_virtual;
    ji["kind"] = i.kind;
    ji["subtype"] = i.subtype.empty() ? Json(nullptr) : Json(i.subtype);
    ji["type"] = i.arphrd_type;
    ji["pci_device"] = opt_str(i.pci_device);
    ji["addresses"] = f.addresses_known ? Json::array() : Json(nullptr);
    for (const auto& a : i.addresses)
      ji["addresses"].push_back({{"family", a.family}, {"address", a.address},
                                 {"prefix_len", a.prefix_len}});
    j["interfaces"].push_back(ji);
  }
  Json s;
  s["value"] = opt_str(f.settings.socket_ifname);
  s["source"] = f.settings.socket_ifname_source;
  s["matched"] = f.socket_ifname_matched;
  s["exclude"] = f.socket_ifname_list ? Json(f.socket_ifname_list->exclude) : Json(nullptr);
  s["exact"] = f.socket_ifname_list ? Json(f.socket_ifname_list->exact) : Json(nullptr);
  s["issues"] = f.socket_ifname_list ? Json(f.socket_ifname_list->issues) : Json::array();
  j["nccl_socket_ifname"] = s;
  j["nccl_pick"] = {{"name", opt_str(f.nccl_pick.name)},
                    {"reason", f.nccl_pick.reason},
                    {"step", f.nccl_pick.step.empty() ? Json(nullptr) : Json(f.nccl_pick.step)},
                    {"all", f.nccl_pick.all}};
  j["recommended"] = {{"name", opt_str(f.recommended.name)}, {"reason", f.recommended.reason}};
  if (f.peer) {
    j["peer"] = {{"given", f.peer->given},
                 {"via", f.peer->via},
                 {"addresses", f.peer->addresses},
                 {"error", opt_str(f.peer->error)},
                 {"on_subnet_of", f.peer->on_subnet_of},
                 {"route_interface", opt_str(f.peer->route_interface)}};
  } else {
    j["peer"] = nullptr;
  }
  j["gloo_socket_ifname"] = opt_str(f.settings.gloo_socket_ifname);
  j["errors"] = Json::array();
  for (const auto& e : f.errors) j["errors"].push_back(e.to_string());
  return j;
}

}  // namespace fabkit::probes
