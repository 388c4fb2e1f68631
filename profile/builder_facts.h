// What the builder takes from each input report. Node reports follow docs/json/
// sections; pair reports carry a "pair" section whose fields we read are listed in
// docs/profile.md ("Pair reports"). Missing sections are facts too ("no rdma section": the node
// was probed by a fabcheck without the RDMA probe), never a crash.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/report.h"
#include "profile/profile_model.h"

namespace fabkit::profile {

// The node report's efa section (docs/efa.md): what the EFA settings are decided from.
struct EfaNode {
  int devices = 0;
  std::optional<std::string> instance_type;  // DMI product_name
  std::optional<bool> device_rdma;           // the instance table's; nullopt: type not in it
  std::optional<std::string> kernel_release;  // /proc/sys/kernel/osrelease
};

struct NodeFacts {
  std::string hostname;
  bool rdma_known = false;         // the report had an "rdma" section
  std::vector<HcaPort> active_ports;
  std::vector<std::string> port_evidence;  // one line per port seen, active or not
  std::optional<std::string> interface;
  std::string interface_evidence;
  int gpu_count = 0;
  std::vector<GpuNic> locality;
  std::optional<std::string> topo_file;  // present on disk when probed
  bool in_container = false;
  std::optional<bool> memlock_unlimited;   // nullopt: no limits section
  std::vector<std::string> nccl_conf_files;  // present nccl.conf files the job must see
  std::vector<Json> roce_qos_ports;  // the report's roce_qos.ports[] (docs/json/roce_qos.md)
  std::vector<Json> ib_qos_ports;    // the report's ib_qos.ports[] (docs/json/ib_qos.md)
  std::optional<EfaNode> efa;        // nullopt: the report has no efa section
  // Section libfabric, field version; section nccl_net_plugin, field version (written by the
  // libfabric and net-plugin probes; absent from reports of fabchecks without them).
  std::optional<std::string> libfabric_version;
  std::optional<std::string> net_plugin_version;
};

struct PairVerdict {
  std::vector<std::string> hosts;
  std::optional<std::string> transport;  // "ib" | "roce" | "socket" (lower case)
  std::map<std::string, std::string> interfaces;  // host -> measured interface
  std::optional<int> port;                         // rendezvous port that passed
  std::optional<std::string> nccl_version;
  std::string summary;  // evidence line: "pair a<->b: ib, busbw 180.2 GB/s"
};

// Throws UsageError naming the source and field when a present field has the wrong type.
NodeFacts node_facts_from_report(const Report& r, const std::string& source);
std::optional<PairVerdict> pair_verdict_from_report(const Report& r, const std::string& source);

}  // namespace fabkit::profile
