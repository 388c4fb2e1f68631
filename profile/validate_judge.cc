// `fabcheck validate`: does this node still match the profile? Pure: the node's report in,
// findings out (docs/findings/profile.md). A section the report lacks is reported as a skipped
// check (info), never as a pass.
#include <cstdlib>
#include <sstream>

#include "profile/ib_qos_rules.h"
#include "profile/profile.h"
#include "profile/resolver.h"
#include "profile/roce_qos_rules.h"
#include "profile/validate_fabric.h"

namespace fabkit::profile {
namespace {

std::string str(const Json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : "";
}

bool flag(const Json& j, const char* k) {
  return j.is_object() && j.contains(k) && j[k].is_boolean() && j[k].get<bool>();
}

std::string rate_text(double r) {
  std::ostringstream o;
  o << r << " Gb/s";
  return o.str();
}

void skipped(std::vector<Finding>& out, const std::string& what, const std::string& section) {
  out.push_back(info("profile.check_skipped", what,
                     "not checked: the node report has no '" + section + "' section",
                     "run a fabcheck built with the " + section + " probe"));
}

void check_interface(const NodeEntry& n, const Report& r, std::vector<Finding>& out) {
  if (!n.interface) return;
  const Json* net = find_section(r, "net");
  if (!net) return skipped(out, *n.interface, "net");
  const Json& ifs = (*net).contains("interfaces") ? (*net)["interfaces"] : Json::array();
  for (const auto& i : ifs) {
    if (str(i, "name") != *n.interface) continue;
    if (!flag(i, "up") || !flag(i, "running"))
      out.push_back(fail("profile.interface_down", *n.interface,
                         "interface " + *n.interface + " is " + str(i, "operstate") +
                             " (up " + (flag(i, "up") ? "yes" : "no") + ", running " +
                             (flag(i, "running") ? "yes" : "no") +
                             "); NCCL and Gloo only use RUNNING interfaces and will pick another "
                             "or fail",
                         "ip link set " + *n.interface + " up; check the cable/switch port "
                         "(ethtool " + *n.interface + ")"));
    return;
  }
  out.push_back(fail("profile.interface_missing", *n.interface,
                     "the profile chose interface " + *n.interface +
                         " for this host, and it does not exist here (renamed by udev, or a "
                         "different host)",
                     "rebuild the profile with this host's report (`fabcheck node --json`), or "
                     "add a hosts." + n.hostname + " override"));
}

const Json* find_port(const Json& rdma, const HcaPort& h) {
  if (!rdma.contains("devices") || !rdma["devices"].is_array()) return nullptr;
  for (const auto& d : rdma["devices"]) {
    if (str(d, "name") != h.device || !d.contains("ports") || !d["ports"].is_array()) continue;
    for (const auto& p : d["ports"])
      if (p.contains("port") && p["port"].is_number() && p["port"].get<int>() == h.port) return &p;
  }
  return nullptr;
}

void check_hcas(const NodeEntry& n, const Report& r, std::vector<Finding>& out) {
  if (n.hcas.empty()) return;
  const Json* rdma = find_section(r, "rdma");
  if (!rdma) return skipped(out, "RDMA ports", "rdma");
  for (const auto& h : n.hcas) {
    std::string id = h.device + ":" + std::to_string(h.port);
    const Json* p = find_port(*rdma, h);
    if (!p) {
      out.push_back(fail("profile.hca_missing", id,
                         "the profile uses " + id + " and this node has no such port",
                         "check `ibv_devinfo`; a renamed device needs a rebuilt profile"));
      continue;
    }
    std::string state = str(*p, "state");
    if (state != "ACTIVE")
      out.push_back(fail("profile.hca_not_active", id,
                         id + " is " + state + " (" + str(*p, "phys_state") +
                             "), recorded ACTIVE; NCCL skips it or fails",
                         "check the cable and the subnet manager (`ibstat`, `sminfo`); RoCE: "
                         "the netdev link (`ip link`)"));
    std::string ll = str(*p, "link_layer");
    if (ll != h.link_layer)
      out.push_back(fail("profile.hca_link_layer", id,
                         id + " link layer is " + ll + ", recorded " + h.link_layer,
                         "the port was reconfigured (mlxconfig LINK_TYPE_P1); rebuild the "
                         "profile or restore the link type"));
    if (h.rate_gbps && p->contains("rate_gbps") && (*p)["rate_gbps"].is_number()) {
      double now = (*p)["rate_gbps"].get<double>();
      if (now + 1e-9 < *h.rate_gbps)
        out.push_back(fail("profile.hca_rate", id,
                           id + " runs at " + rate_text(now) + ", recorded " +
                               rate_text(*h.rate_gbps) +
                               ": a degraded link (lanes down or speed downshift) slows every "
                               "collective in the job",
                           "reseat or replace the cable; `ibstat " + h.device + "` shows width "
                           "and speed"));
      else if (now > *h.rate_gbps + 1e-9)
        out.push_back(info("profile.hca_rate", id,
                           id + " runs at " + rate_text(now) + ", faster than the recorded " +
                               rate_text(*h.rate_gbps)));
    }
  }
}

void check_memlock(const Profile& p, const Report& r, std::vector<Finding>& out) {
  if (!p.container.memlock_unlimited) return;
  const Json* lim = find_section(r, "limits");
  if (!lim) return skipped(out, "RLIMIT_MEMLOCK", "limits");
  const Json& m = (*lim).contains("memlock_bytes") ? (*lim)["memlock_bytes"] : Json();
  if (!m.is_object()) return skipped(out, "RLIMIT_MEMLOCK", "limits.memlock_bytes");
  const Json& soft = m["soft"];
  if (soft.is_string() && soft.get<std::string>() == "unlimited") return;
  out.push_back(fail("profile.memlock_low", "RLIMIT_MEMLOCK",
                     "memlock soft limit is " + soft.dump() +
                         " bytes; the profile uses RDMA, which needs unlimited (NCCL: \"Call to "
                         "ibv_reg_mr failed\")",
                     "'* soft memlock unlimited' in /etc/security/limits.conf; slurmd: "
                     "LimitMEMLOCK=infinity; docker: --ulimit memlock=-1"));
}

void check_topo(const std::map<std::string, std::string>& env, const Report& r,
                std::vector<Finding>& out) {
  auto it = env.find("NCCL_TOPO_FILE");
  if (it == env.end()) return;
  const std::string& path = it->second;
  // The validate command stats the profile's file into "profile_files"; a node probe's own
  // topo_file section counts when it looked at the same path.
  std::optional<bool> present;
  if (const Json* pf = find_section(r, "profile_files"))
    if (pf->contains("topo_file") && str((*pf)["topo_file"], "path") == path)
      present = flag((*pf)["topo_file"], "present");
  if (!present)
    if (const Json* t = find_section(r, "topo_file"))
      if (str(*t, "path") == path) present = flag(*t, "present");
  if (!present) return skipped(out, path, "topo_file");
  if (!*present)
    out.push_back(fail("profile.topo_file_missing", path,
                       "NCCL_TOPO_FILE " + path + " does not exist on this node; NCCL fails to "
                       "load it (\"Could not open XML topology file\")",
                       "copy the topology file to " + path + " (or bind it into the container)"));
}

// The profile's NCCL_IB_TC was chosen to land on a PFC-enabled priority; a node whose DSCP map or
// PFC changed since (a reboot that lost mlnx_qos settings) now carries NCCL's traffic lossy.
void check_roce_qos(const std::map<std::string, std::string>& env, const Report& r,
                    std::vector<Finding>& out) {
  auto it = env.find("NCCL_IB_TC");
  if (it == env.end()) return;
  const Json* qos = find_section(r, "roce_qos");
  if (!qos) return skipped(out, "NCCL_IB_TC", "roce_qos");
  const int tc = std::atoi(it->second.c_str());
  const Json& ports = (*qos).contains("ports") ? (*qos)["ports"] : Json::array();
  for (const auto& p : ports) {
    const std::string id = str(p, "device") + ":" + (p.contains("port") ? p["port"].dump() : "?");
    bool pfc_on = false;
    auto prio = priority_for_traffic_class(p, tc, &pfc_on);
    if (!prio) {
      out.push_back(info("profile.check_skipped", id,
                         "NCCL_IB_TC=" + it->second + " not checked on " + id +
                             ": trust dscp and the DCB state are needed (" +
                             lossless_traffic_class(p).why + ")",
                         "run fabcheck validate on the node itself (DCB is read live)"));
      continue;
    }
    if (pfc_on) continue;
    out.push_back(
        warn("profile.roce_qos_drifted", id,
             "the profile's NCCL_IB_TC=" + it->second + " (DSCP " + std::to_string(tc >> 2) +
                 ") lands on priority " + std::to_string(*prio) + " on " + id +
                 ", which has no PFC now: this node's QoS changed since the profile was "
                 "built, and NCCL's traffic is lossy here",
             "restore the node's PFC and DSCP map (mlnx_qos -i <netdev> --trust dscp --pfc "
             "with priority " +
                 std::to_string(*prio) +
                 " on; `fabcheck node` names the "
                 "exact setting), or rebuild the profile if the fabric changed on purpose"));
  }
}

// The profile's NCCL_IB_SL was the SM's PathRecord SL and reached a data VL; a node whose SM
// programming changed since (a new qos policy, a port the SM skipped) drops or misroutes it.
void check_ib_qos(const std::map<std::string, std::string>& env, const Report& r,
                  std::vector<Finding>& out) {
  auto it = env.find("NCCL_IB_SL");
  if (it == env.end()) return;
  const Json* qos = find_section(r, "ib_qos");
  if (!qos) return skipped(out, "NCCL_IB_SL", "ib_qos");
  const int sl = std::atoi(it->second.c_str());
  const Json& ports = (*qos).contains("ports") ? (*qos)["ports"] : Json::array();
  for (const auto& p : ports) {
    const std::string id = str(p, "device") + ":" + (p.contains("port") ? p["port"].dump() : "?");
    int vl = -1;
    auto reaches = sl_reaches_data_vl(p, sl, &vl);
    if (!reaches) {
      out.push_back(info("profile.check_skipped", id,
                         "NCCL_IB_SL=" + it->second + " not checked on " + id +
                             ": the SL-to-VL table was not read (" + str(p, "status") + ": " +
                             str(p, "detail") + ")",
                         "run fabcheck validate on the node itself, as root (the MADs need "
                         "/dev/infiniband/umad*)"));
      continue;
    }
    const IbSlChoice now = path_record_sl(p);
    std::string why;
    if (!*reaches)
      why = "maps to VL" + std::to_string(vl) + " on " + id +
            ", which carries no data now (VL15, or at or above OperationalVLs): NCCL's QPs on it "
            "hang";
    else if (now.sl && *now.sl != sl)
      why = "differs from the SL " + std::to_string(*now.sl) + " the subnet manager's PathRecord " +
            "gives on " + id + " now";
    if (why.empty()) continue;
    out.push_back(warn("profile.ib_qos_drifted", id,
                       "the profile's NCCL_IB_SL=" + it->second + " " + why +
                           ": this node's IB QoS changed since the profile was built",
                       "restore the subnet manager's QoS configuration (opensm qos_sl2vl / "
                       "qos_max_vls; `fabcheck node` shows the table and PathRecord), or rebuild "
                       "the profile if the fabric changed on purpose"));
  }
}

void check_env_conflicts(const std::map<std::string, std::string>& env, const Report& r,
                         std::vector<Finding>& out) {
  const Json* ne = find_section(r, "nccl_env");
  if (!ne || !ne->contains("variables") || !(*ne)["variables"].is_array()) return;
  for (const auto& v : (*ne)["variables"]) {
    auto it = env.find(str(v, "name"));
    if (it == env.end() || str(v, "value") == it->second) continue;
    out.push_back(warn("profile.env_conflict", it->first,
                       it->first + "=" + str(v, "value") + " from " + str(v, "source") +
                           " differs from the profile's " + it->second +
                           "; the process environment wins over nccl.conf, so the job gets "
                           "whichever is exported last",
                       "remove it from " + str(v, "source") + ", or export the profile's value "
                       "(fabcheck emit-env --format shell)"));
  }
}

}  // namespace

std::vector<Finding> validate_node(const Profile& p, const Report& node_report,
                                   const std::string& host) {
  std::vector<Finding> out;
  if (!p.computed_hash.empty() && p.computed_hash != p.provenance.content_hash)
    out.push_back(warn("profile.hash_mismatch", "cluster.json",
                       "content hash " + p.computed_hash + " differs from the recorded " +
                           p.provenance.content_hash + ": the profile was edited after `fabcheck "
                           "profile` wrote it",
                       "if the edit is intended, rebuild with `fabcheck profile` so the hash and "
                       "evidence match"));
  auto name = match_host(p, host);
  const NodeEntry* node = nullptr;
  for (const auto& n : p.nodes)
    if (name && n.hostname == *name) node = &n;
  if (!node) {
    out.push_back(warn("profile.host_unknown", host,
                       "host " + host + " is not among the profile's nodes; only cluster-wide "
                       "settings can be checked",
                       "add this host's `fabcheck node --json` report to `fabcheck profile`"));
  } else {
    check_interface(*node, node_report, out);
    check_hcas(*node, node_report, out);
  }
  check_fabric_drift(p, node, node_report, out);
  check_memlock(p, node_report, out);
  std::map<std::string, std::string> env;
  if (name || p.hosts.empty()) env = resolve_env(p, name.value_or(host));
  check_topo(env, node_report, out);
  check_roce_qos(env, node_report, out);
  check_ib_qos(env, node_report, out);
  check_env_conflicts(env, node_report, out);
  // "ok" only when every check ran and passed: a skipped check is not a pass.
  if (out.empty())
    out.push_back(info("profile.ok", host, "this node matches the profile"));
  return out;
}

}  // namespace fabkit::profile
