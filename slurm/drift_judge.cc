#include "slurm/drift_judge.h"

#include <algorithm>
#include <set>

namespace fabkit::slurm {
namespace {

std::string text_of(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  return j.dump();
}

const Json* section(const Json& report, const char* name) {
  if (!report.is_object() || !report.contains(name) || !report[name].is_object()) return nullptr;
  return &report[name];
}

struct Kind {
  const char* prefix;
  const char* code;
  const char* what;
  const char* fix;
};

// The fix names the command that brings a node in line with the others.
const Kind kKinds[] = {
    {"nccl_version", "cluster.drift_nccl_version", "NCCL version",
     "install the same NCCL on every node (one container image, or the same nvidia-nccl wheel); "
     "mixed versions can hang or crash collectives"},
    {"memlock_soft", "cluster.drift_memlock", "memlock limit (soft)",
     "set the same limit everywhere: `* soft memlock unlimited` and `* hard memlock unlimited` in "
     "/etc/security/limits.d/rdma.conf, and PropagateResourceLimitsExcept=MEMLOCK or "
     "LimitMEMLOCK=infinity for slurmd"},
    {"hcas", "cluster.drift_hcas", "RDMA device set",
     "the node lacks (or has extra) HCAs: `ls /sys/class/infiniband`, the driver (`modprobe "
     "mlx5_ib`), the card (`lspci | grep -i mellanox`); drain it until it matches: `scontrol "
     "update NodeName=NODE State=DRAIN Reason=\"fabcheck: HCA missing\"`"},
    {"fw_ver:", "cluster.drift_firmware", "HCA firmware",
     "flash the firmware the other nodes run (`mlxfwmanager --online -u` or the vendor's "
     "package) and reboot or `mlxfwreset -d DEV reset`"},
    {"mtu:", "cluster.drift_mtu", "MTU",
     "`ip link set dev IFACE mtu N` with the other nodes' N (and the same on the switch ports); "
     "persist it in the network configuration"},
    {"gid_v2_index:", "cluster.drift_gid", "RoCE v2 GID index",
     "NCCL_IB_GID_INDEX is one value for the whole job: give every node the same GID layout (the "
     "same address families on the RoCE netdev, no extra IPv6/VLAN addresses on one node only)"},
    {"gpu_driver", "cluster.drift_gpu_driver", "NVIDIA driver version",
     "install the driver the other nodes run (one driver package/version across the cluster; "
     "the fabric manager, where NVSwitch is used, at the same version), then reboot"},
    {"gpu_vbios:", "cluster.drift_gpu_vbios", "GPU VBIOS",
     "update the GPU firmware to the other nodes' version (the server vendor's or NVIDIA's "
     "firmware update package for this board), then reboot; `nvidia-smi -q | grep -i vbios`"},
    {"gpu_inforom:", "cluster.drift_gpu_inforom", "GPU InfoROM image",
     "update the GPU firmware bundle (the InfoROM image comes with it) to the other nodes' "
     "version; `nvidia-smi -q | grep -i -A4 inforom`"},
    {"roce_pfc:", "cluster.drift_roce_qos", "RoCE PFC priorities",
     "every node's RoCE NIC must classify and pause NCCL's traffic the same way (and match the "
     "switches): set the same trust, PFC priorities and ECN as the other nodes (`mlnx_qos -i IF "
     "--trust dscp --pfc 0,0,0,1,0,0,0,0`, `echo 1 > /sys/class/net/IF/ecn/roce_np/enable/P`) "
     "and the same NCCL_IB_TC; `fabcheck node` on the node names the exact setting"},
    {"roce_trust:", "cluster.drift_roce_qos", "RoCE trust mode",
     "every node's RoCE NIC must classify and pause NCCL's traffic the same way (and match the "
     "switches): set the same trust, PFC priorities and ECN as the other nodes (`mlnx_qos -i IF "
     "--trust dscp --pfc 0,0,0,1,0,0,0,0`, `echo 1 > /sys/class/net/IF/ecn/roce_np/enable/P`) "
     "and the same NCCL_IB_TC; `fabcheck node` on the node names the exact setting"},
    {"roce_nccl_priority:", "cluster.drift_roce_qos", "priority of NCCL's RoCE traffic",
     "every node's RoCE NIC must classify and pause NCCL's traffic the same way (and match the "
     "switches): set the same trust, PFC priorities and ECN as the other nodes (`mlnx_qos -i IF "
     "--trust dscp --pfc 0,0,0,1,0,0,0,0`, `echo 1 > /sys/class/net/IF/ecn/roce_np/enable/P`) "
     "and the same NCCL_IB_TC; `fabcheck node` on the node names the exact setting"},
    {"roce_ecn:", "cluster.drift_roce_qos", "ECN on NCCL's RoCE priority",
     "every node's RoCE NIC must classify and pause NCCL's traffic the same way (and match the "
     "switches): set the same trust, PFC priorities and ECN as the other nodes (`mlnx_qos -i IF "
     "--trust dscp --pfc 0,0,0,1,0,0,0,0`, `echo 1 > /sys/class/net/IF/ecn/roce_np/enable/P`) "
     "and the same NCCL_IB_TC; `fabcheck node` on the node names the exact setting"},
    {"ib_sl2vl:", "cluster.drift_ib_qos", "IB SL-to-VL table",
     "NCCL_IB_SL is one value for the whole job: the subnet manager must program every node's "
     "ports alike (opensm: one qos_ca_sl2vl / qos_ca_max_vls for all CAs, then a heavy sweep or "
     "restart; a port it skipped shows an old table); `fabcheck node` on the node shows its "
     "table, OperationalVLs and PathRecord SL"},
    {"ib_oper_vls:", "cluster.drift_ib_qos", "IB OperationalVLs",
     "NCCL_IB_SL is one value for the whole job: the subnet manager must program every node's "
     "ports alike (opensm: one qos_ca_sl2vl / qos_ca_max_vls for all CAs, then a heavy sweep or "
     "restart; a port it skipped shows an old table); `fabcheck node` on the node shows its "
     "table, OperationalVLs and PathRecord SL"},
    {"ib_nccl_vl:", "cluster.drift_ib_qos", "VL of NCCL's IB service level",
     "NCCL_IB_SL is one value for the whole job: the subnet manager must program every node's "
     "ports alike (opensm: one qos_ca_sl2vl / qos_ca_max_vls for all CAs, then a heavy sweep or "
     "restart; a port it skipped shows an old table); `fabcheck node` on the node shows its "
     "table, OperationalVLs and PathRecord SL"},
    {"ib_path_sl:", "cluster.drift_ib_qos", "SM PathRecord SL",
     "NCCL_IB_SL is one value for the whole job: the subnet manager must program every node's "
     "ports alike (opensm: one qos_ca_sl2vl / qos_ca_max_vls for all CAs, then a heavy sweep or "
     "restart; a port it skipped shows an old table); `fabcheck node` on the node shows its "
     "table, OperationalVLs and PathRecord SL"},
    {"libfabric_version", "cluster.drift_libfabric", "libfabric release",
     "install the same libfabric everywhere (on AWS the same EFA installer, which puts it in "
     "/opt/amazon/efa; one container image); aws-ofi-nccl is built against one libfabric"},
    {"net_plugin", "cluster.drift_net_plugin", "NCCL net plugin",
     "give every node the same NCCL net plugin (on AWS the same aws-ofi-nccl from the EFA "
     "installer, /opt/amazon/ofi-nccl/lib, and the same LD_LIBRARY_PATH or NCCL_NET_PLUGIN): a "
     "node without it runs NCCL over sockets and slows every collective"},
    {"gid_types:", "cluster.drift_gid", "GID table types",
     "give every node the same GID layout (the same addresses on the RoCE netdev, RoCE v2 "
     "enabled: `cma_roce_mode -d DEV -p PORT -m 2`)"},
};

const Kind* kind_of(const std::string& key) {
  for (const auto& k : kKinds)
    if (key.rfind(k.prefix, 0) == 0) return &k;
  return nullptr;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::map<std::string, std::string> drift_facts_from_node_report(const Json& r) {
  std::map<std::string, std::string> out;
  if (const Json* lim = section(r, "limits")) {
    if (lim->contains("memlock_bytes") && (*lim)["memlock_bytes"].is_object()) {
      const Json& m = (*lim)["memlock_bytes"];
      if (m.contains("soft") && !m["soft"].is_null()) out["memlock_soft"] = text_of(m["soft"]);
    }
  }
  if (const Json* net = section(r, "net")) {
    for (const auto& i : net->value("interfaces", Json::array())) {
      if (!i.is_object() || i.value("kind", "") == "loopback" || !i.value("running", false))
        continue;
      if (i.contains("mtu") && i["mtu"].is_number() && i.contains("name") && i["name"].is_string())
        out["mtu:" + i["name"].get<std::string>()] = text_of(i["mtu"]);
    }
  }
  // The fabric stack NCCL's OFI path runs on (docs/efa.md): which libfabric, and which plugin
  // NCCL would load (kind, version and file), "(none)" where none would.
  if (const Json* lf = section(r, "libfabric"))
    if (lf->contains("version") && (*lf)["version"].is_string())
      out["libfabric_version"] = (*lf)["version"].get<std::string>();
  if (const Json* np = section(r, "nccl_net_plugin")) {
    if (np->contains("plugin") && (*np)["plugin"].is_object()) {
      const Json& p = (*np)["plugin"];
      auto field = [&](const char* k) {
        return p.contains(k) && p[k].is_string() ? p[k].get<std::string>() : std::string();
      };
      std::string v = field("kind");
      if (!field("version").empty()) v += " " + field("version");
      out["net_plugin"] = v + " (" + field("path") + ")";
    } else if (np->contains("plugin") && (*np)["plugin"].is_null()) {
      out["net_plugin"] = "(none)";
    }
  }
  add_gpu_drift_facts(r, out);
  add_roce_qos_drift_facts(r, out);
  add_ib_qos_drift_facts(r, out);
  if (const Json* rdma = section(r, "rdma")) {
    // The set of devices, so a node that lost one (driver not loaded, a dead card) stands out;
    // only when the section lists its devices (an empty list is "none", not "unknown").
    if (rdma->contains("devices") && (*rdma)["devices"].is_array()) {
      std::set<std::string> names;
      for (const auto& d : (*rdma)["devices"])
        if (d.is_object() && d.contains("name") && d["name"].is_string())
          names.insert(d["name"].get<std::string>());
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ",") + n;
      out["hcas"] = list.empty() ? "(none)" : list;
    }
    for (const auto& d : rdma->value("devices", Json::array())) {
      if (!d.is_object() || !d.contains("name") || !d["name"].is_string()) continue;
      std::string hca = d["name"].get<std::string>();
      if (d.contains("fw_ver") && d["fw_ver"].is_string()) out["fw_ver:" + hca] = d["fw_ver"];
      for (const auto& p : d.value("ports", Json::array())) {
        if (!p.is_object() || !p.contains("port") || !p["port"].is_number_integer()) continue;
        std::string obj = hca + ":" + std::to_string(p["port"].get<int>());
        if (p.contains("roce_v2_gid_index") && p["roce_v2_gid_index"].is_number())
          out["gid_v2_index:" + obj] = text_of(p["roce_v2_gid_index"]);
        if (p.value("gids_known", false) && p.contains("gids") && p["gids"].is_array()) {
          std::string types;
          for (const auto& g : p["gids"])
            if (g.is_object())
              types += (types.empty() ? "" : " ") + text_of(g.value("index", Json())) + "=" +
                       (g.contains("type") && g["type"].is_string() ? g["type"].get<std::string>()
                                                                    : "?");
          out["gid_types:" + obj] = types;
        }
      }
    }
  }
  return out;
}

std::vector<Finding> judge_drift(const std::vector<NodeDriftFacts>& nodes) {
  std::set<std::string> keys;
  for (const auto& n : nodes)
    for (const auto& [k, _] : n.values) keys.insert(k);
  std::vector<Finding> out;
  for (const auto& key : keys) {
    const Kind* kind = kind_of(key);
    if (!kind) continue;
    std::map<std::string, std::vector<std::string>> by_value;  // value -> hosts
    for (const auto& n : nodes) {
      auto it = n.values.find(key);
      if (it != n.values.end()) by_value[it->second].push_back(n.host);
    }
    if (by_value.size() < 2) continue;
    size_t top = 0;
    for (const auto& [_, hs] : by_value) top = std::max(top, hs.size());
    std::vector<std::string> leaders;
    for (const auto& [val, hs] : by_value)
      if (hs.size() == top) leaders.push_back(val);
    std::string object = key.find(':') == std::string::npos ? "" : key.substr(key.find(':') + 1);
    std::string what = std::string(kind->what) + (object.empty() ? "" : " of " + object);
    if (leaders.size() > 1) {
      // No majority: name every group and let the operator pick.
      std::string groups;
      for (const auto& [val, hs] : by_value)
        groups += (groups.empty() ? "" : "; ") + val + " on " + join(hs);
      out.push_back(warn(kind->code, key,
                         what + " differs between nodes with no majority: " + groups, kind->fix));
      continue;
    }
    const std::string& expected = leaders[0];
    for (const auto& [val, hs] : by_value) {
      if (val == expected) continue;
      for (const auto& h : hs)
        out.push_back(warn(kind->code, h + ":" + key,
                           what + " is " + val + " on " + h + "; " + std::to_string(top) + " of " +
                               std::to_string(nodes.size()) + " nodes have " + expected + " (" +
                               join(by_value[expected]) + ")",
                           std::string(kind->fix) + " (on " + h + ")"));
    }
  }
  return out;
}

}  // namespace fabkit::slurm
