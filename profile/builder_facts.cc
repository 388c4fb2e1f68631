#include "profile/builder_facts.h"

#include <cctype>
#include <sstream>

#include "common/errors.h"
#include "profile/value_rules.h"

namespace fabkit::profile {
namespace {

// Tolerant getters: absent or null -> nullopt; present with the wrong type -> UsageError, since
// a report that says "rate_gbps": "fast" is a broken input, not an unknown.
struct Get {
  const std::string& source;
  [[noreturn]] void bad(const std::string& field, const Json& v, const char* want) const {
    throw UsageError(source + ": field '" + field + "': value " +
                     show_json_value(v) +
                     " is not " + want + " (see docs/json/ for the report sections)");
  }
  std::optional<std::string> str(const Json& j, const char* k, const std::string& path) const {
    if (!j.is_object() || !j.contains(k) || j[k].is_null()) return std::nullopt;
    if (!j[k].is_string()) bad(path + "." + k, j[k], "a string");
    return j[k].get<std::string>();
  }
  std::optional<double> num(const Json& j, const char* k, const std::string& path) const {
    if (!j.is_object() || !j.contains(k) || j[k].is_null()) return std::nullopt;
    if (!j[k].is_number()) bad(path + "." + k, j[k], "a number");
    return j[k].get<double>();
  }
  std::optional<bool> boolean(const Json& j, const char* k, const std::string& path) const {
    if (!j.is_object() || !j.contains(k) || j[k].is_null()) return std::nullopt;
    if (!j[k].is_boolean()) bad(path + "." + k, j[k], "true/false");
    return j[k].get<bool>();
  }
  const Json& obj(const Json& j, const char* k, const std::string& path) const {
    static const Json kEmpty = Json::object();
    if (!j.is_object() || !j.contains(k) || j[k].is_null()) return kEmpty;
    if (!j[k].is_object()) bad(path + "." + k, j[k], "an object");
    return j[k];
  }
  const Json& arr(const Json& j, const char* k, const std::string& path) const {
    static const Json kEmpty = Json::array();
    if (!j.is_object() || !j.contains(k) || j[k].is_null()) return kEmpty;
    if (!j[k].is_array()) bad(path + "." + k, j[k], "an array");
    return j[k];
  }
};

std::string fmt_rate(std::optional<double> r) {
  if (!r) return "rate unknown";
  std::ostringstream o;
  o << *r << " Gb/s";
  return o.str();
}

void read_rdma(const Get& g, const Json& rdma, NodeFacts& f) {
  f.rdma_known = true;
  const Json& devices = g.arr(rdma, "devices", "rdma");
  for (size_t d = 0; d < devices.size(); ++d) {
    std::string dp = "rdma.devices[" + std::to_string(d) + "]";
    std::string dev = g.str(devices[d], "name", dp).value_or("");
    const Json& ports = g.arr(devices[d], "ports", dp);
    for (size_t p = 0; p < ports.size(); ++p) {
      std::string pp = dp + ".ports[" + std::to_string(p) + "]";
      auto port = g.num(ports[p], "port", pp);
      auto state = g.str(ports[p], "state", pp).value_or("unknown");
      auto ll = g.str(ports[p], "link_layer", pp).value_or("unknown");
      auto rate = g.num(ports[p], "rate_gbps", pp);
      std::string id = dev + ":" + (port ? std::to_string(static_cast<int>(*port)) : "?");
      f.port_evidence.push_back(f.hostname + " rdma: " + id + " " + state + " " + ll + " " +
                                fmt_rate(rate));
      if (state != "ACTIVE" || !port || dev.empty()) continue;
      if (ll != "InfiniBand" && ll != "Ethernet") continue;
      HcaPort h;
      h.device = dev;
      h.port = static_cast<int>(*port);
      h.link_layer = ll;
      h.rate_gbps = rate;
      if (auto gid = g.num(ports[p], "roce_v2_gid_index", pp)) h.roce_v2_gid_index = static_cast<int>(*gid);
      // A name we could not write into NCCL_IB_HCA safely is left out, with the reason.
      if (check_variable_value("NCCL_IB_HCA", h.device)) {
        f.port_evidence.push_back(f.hostname + " rdma: " + quote_for_message(dev) +
                                  " skipped: not a valid HCA name");
        continue;
      }
      f.active_ports.push_back(h);
    }
  }
}

void read_interface(const Get& g, const Json& net, NodeFacts& f) {
  // The net probe's recommendation (peer subnet, physical, up) first, then NCCL's own pick.
  for (const char* k : {"recommended", "nccl_pick"}) {
    if (!net.contains(k) || !net[k].is_object()) continue;
    auto name = g.str(net[k], "name", std::string("net.") + k);
    if (!name) continue;
    if (check_interface_name(*name)) continue;
    f.interface = name;
    f.interface_evidence = f.hostname + " net." + k + ": " + *name + " (" +
                           g.str(net[k], "reason", std::string("net.") + k).value_or("") + ")";
    return;
  }
}

}  // namespace

NodeFacts node_facts_from_report(const Report& r, const std::string& source) {
  Get g{source};
  NodeFacts f;
  f.hostname = r.hostname;
  if (auto e = check_hostname(f.hostname))
    throw UsageError(source + ": field 'hostname': value " + quote_for_message(f.hostname) + " " +
                     *e + "; run `fabcheck node --json` on the host itself (not under --sysroot)");
  if (const Json* rdma = find_section(r, "rdma")) read_rdma(g, *rdma, f);
  if (const Json* qos = find_section(r, "roce_qos")) {
    const Json& ports = g.arr(*qos, "ports", "roce_qos");
    for (const auto& p : ports) f.roce_qos_ports.push_back(p);
  }
  if (const Json* qos = find_section(r, "ib_qos")) {
    const Json& ports = g.arr(*qos, "ports", "ib_qos");
    for (const auto& p : ports) f.ib_qos_ports.push_back(p);
  }
  if (const Json* efa = find_section(r, "efa")) {
    EfaNode e;
    e.devices = static_cast<int>(g.num(*efa, "device_count", "efa").value_or(0));
    e.instance_type = g.str(*efa, "product_name", "efa");
    e.device_rdma = g.boolean(g.obj(*efa, "instance", "efa"), "device_rdma", "efa.instance");
    e.kernel_release = g.str(*efa, "kernel_release", "efa");
    f.efa = e;
  }
  for (auto [name, slot] : {std::pair{"libfabric", &f.libfabric_version},
                            std::pair{"nccl_net_plugin", &f.net_plugin_version}})
    if (const Json* sec = find_section(r, name)) {
      *slot = g.str(*sec, "version", name);
      if (*slot && check_fabric_label(**slot)) *slot = std::nullopt;  // never into a profile
    }
  if (const Json* net = find_section(r, "net")) read_interface(g, *net, f);
  if (const Json* gpus = find_section(r, "gpus"))
    f.gpu_count = static_cast<int>(g.num(*gpus, "count", "gpus").value_or(0));
  if (const Json* loc = find_section(r, "locality")) {
    const Json& gl = g.arr(*loc, "gpus", "locality");
    for (size_t i = 0; i < gl.size(); ++i) {
      std::string p = "locality.gpus[" + std::to_string(i) + "]";
      GpuNic n;
      n.gpu_bus_id = g.str(gl[i], "bus_id", p).value_or("");
      n.nearest_nic = g.str(gl[i], "nearest_nic", p);
      n.path_level = g.str(gl[i], "path_level", p);
      f.locality.push_back(n);
    }
    if (f.gpu_count == 0) f.gpu_count = static_cast<int>(gl.size());
  }
  if (const Json* topo = find_section(r, "topo_file")) {
    auto path = g.str(*topo, "path", "topo_file");
    if (path && g.boolean(*topo, "present", "topo_file").value_or(false) &&
        !check_variable_value("NCCL_TOPO_FILE", *path))
      f.topo_file = path;
  }
  if (const Json* lim = find_section(r, "limits")) {
    if (lim->contains("memlock_bytes") && (*lim)["memlock_bytes"].is_object()) {
      const Json& soft = (*lim)["memlock_bytes"]["soft"];
      f.memlock_unlimited = soft.is_string() && soft.get<std::string>() == "unlimited";
    }
    if (lim->contains("container") && (*lim)["container"].is_object())
      f.in_container = g.boolean((*lim)["container"], "detected", "limits.container").value_or(false);
  }
  if (const Json* env = find_section(r, "nccl_env")) {
    const Json& files = g.arr(*env, "files_read", "nccl_env");
    for (size_t i = 0; i < files.size(); ++i) {
      std::string p = "nccl_env.files_read[" + std::to_string(i) + "]";
      auto path = g.str(files[i], "path", p);
      if (path && g.boolean(files[i], "present", p).value_or(false) &&
          !check_variable_value("NCCL_TOPO_FILE", *path))
        f.nccl_conf_files.push_back(*path);
    }
  }
  return f;
}

namespace {

// fabcheck pair's transport names (docs/json/pair.md) -> the network NCCL should use.
// gloo-ibverbs says RDMA but not which link layer: the RC pairs' link layer decides.
std::optional<std::string> network_of(const std::string& transport, const Json& pair) {
  if (transport == "nccl-ib") return "ib";
  if (transport == "nccl-roce") return "roce";
  if (transport == "fabkit-socket" || transport == "gloo-tcp" || transport == "nccl-socket")
    return "socket";
  if (transport == "gloo-ibverbs") {
    const Json* rc = pair.contains("rdma_rc") ? &pair["rdma_rc"] : nullptr;
    if (rc && rc->contains("pairs") && (*rc)["pairs"].is_array())
      for (const auto& p : (*rc)["pairs"])
        if (p.value("link_layer", "") == "Ethernet") return "roce";
    return "ib";
  }
  return std::nullopt;  // raw-exchange is never a recommendation; unknown names stay unknown
}

}  // namespace

// Reads the `pair` section exactly as `fabcheck pair --json` writes it (docs/json/pair.md):
// hosts {a, b}, agents.{a,b}.hostname, recommended {transport, interface_a, interface_b},
// rendezvous {port, status}, transports[] {transport, peak_busbw_gbps}.
std::optional<PairVerdict> pair_verdict_from_report(const Report& r, const std::string& source) {
  const Json* pair = find_section(r, "pair");
  if (!pair) return std::nullopt;
  Get g{source};
  PairVerdict v;
  const Json& hosts = g.obj(*pair, "hosts", "pair");
  std::string host[2];
  const char* side[2] = {"a", "b"};
  for (int i = 0; i < 2; ++i) {
    // The node reports carry gethostname(); the agents report it too. Fall back to the name the
    // user gave the launcher.
    if (auto given = g.str(hosts, side[i], "pair.hosts")) host[i] = *given;
    if (pair->contains("agents") && (*pair)["agents"].is_object() &&
        (*pair)["agents"].contains(side[i]) && (*pair)["agents"][side[i]].is_object())
      if (auto hn = g.str((*pair)["agents"][side[i]], "hostname", "pair.agents"))
        if (!hn->empty()) host[i] = *hn;
    if (!host[i].empty() && !check_hostname(host[i])) v.hosts.push_back(host[i]);
  }
  if (!pair->contains("recommended") || !(*pair)["recommended"].is_object()) return v;
  const Json& rec = (*pair)["recommended"];
  auto transport = g.str(rec, "transport", "pair.recommended");
  if (transport) v.transport = network_of(*transport, *pair);
  const char* ifkey[2] = {"interface_a", "interface_b"};
  for (int i = 0; i < 2; ++i)
    if (auto ifname = g.str(rec, ifkey[i], "pair.recommended"))
      if (!host[i].empty() && !check_interface_name(*ifname) && !check_hostname(host[i]))
        v.interfaces[host[i]] = *ifname;
  if (pair->contains("rendezvous") && (*pair)["rendezvous"].is_object()) {
    const Json& rv = (*pair)["rendezvous"];
    if (rv.value("status", Json()).is_string() && rv["status"] == "open")
      if (auto port = g.num(rv, "port", "pair.rendezvous"))
        if (*port >= 1 && *port <= 65535) v.port = static_cast<int>(*port);
  }
  // The NCCL version comes from the log of an NCCL run (transports[].ranks[].extra.nccl_log).
  if (pair->contains("transports") && (*pair)["transports"].is_array())
    for (const auto& t : (*pair)["transports"])
      if (t.is_object() && t.contains("ranks") && t["ranks"].is_array())
        for (const auto& rk : t["ranks"])
          if (rk.is_object() && rk.contains("extra") && rk["extra"].is_object() &&
              rk["extra"].contains("nccl_log") && rk["extra"]["nccl_log"].is_object())
            if (auto ver = g.str(rk["extra"]["nccl_log"], "version", "pair.transports[].ranks[]"))
              if (!ver->empty() && !v.nccl_version) v.nccl_version = *ver;
  std::ostringstream s;
  s << "pair " << host[0] << "<->" << host[1] << ": " << transport.value_or("no usable transport");
  if (transport && pair->contains("transports") && (*pair)["transports"].is_array())
    for (const auto& t : (*pair)["transports"])
      if (t.is_object() && t.value("transport", "") == *transport)
        if (auto bw = g.num(t, "peak_busbw_gbps", "pair.transports[]"))
          s << ", all-reduce busbw " << *bw << " GB/s";
  v.summary = s.str();
  return v;
}

}  // namespace fabkit::profile
