#include <algorithm>
#include <set>

#include "probes/topo_file/topo_file_facts.h"
#include "topo/topology_json.h"

namespace fabkit::probes {
namespace {

const char* kDumpFix =
    "on a node of this type without the variable set, run a job with "
    "NCCL_TOPO_DUMP_FILE=/tmp/topo.xml "
    "and point NCCL_TOPO_FILE at that file (or unset NCCL_TOPO_FILE to let NCCL probe the PCI "
    "tree)";

}  // namespace

std::vector<Finding> judge_topo_file(const TopoFileFacts& f,
                                     const std::optional<std::vector<std::string>>& rdma_devices) {
  std::vector<Finding> out;
  if (!f.path) return out;
  const std::string& subject = *f.path;
  const std::string who = f.source + "=" + *f.path;
  if (!f.present) {
    out.push_back(fail(
        "topo_file.missing", subject,
        who + " names a file that does not exist; NCCL ignores it silently and "
              "probes the PCI tree, which in a container/VM is what the file was "
              "meant to replace",
        std::string("copy the topology file into the image/node at that path, or ") + kDumpFix));
    return out;
  }
  if (!f.error.empty()) {
    out.push_back(fail("topo_file.malformed", subject,
                       who + " cannot be loaded: " + f.error +
                           "; NCCL fails communicator init "
                           "(\"XML Topology ...\") with such a file",
                       std::string("fix the element named above, or ") + kDumpFix));
    return out;
  }
  const topo::LoadedTopology& lt = *f.loaded;
  if (lt.kind == topo::DocumentKind::kNcclGraph) {
    out.push_back(fail("topo_file.is_graph", subject,
                       who + " is an NCCL graph file (<graphs>, " + std::to_string(lt.graph_count) +
                           " graph(s): channel orderings for NCCL_GRAPH_FILE), not a topology "
                           "(<system>)",
                       "set NCCL_GRAPH_FILE=" + *f.path +
                           " if a graph file was meant, and point NCCL_TOPO_FILE at the topology "
                           "XML (<system version=\"1\">) of this node type"));
    return out;
  }
  if (lt.kind == topo::DocumentKind::kHwlocXml) {
    out.push_back(fail("topo_file.is_hwloc", subject,
                       who + " is an hwloc XML export (<topology>), not an NCCL topology "
                             "(<system>); NCCL does not read hwloc's format",
                       kDumpFix));
    return out;
  }
  const topo::Topology& t = lt.topology;
  if (lt.kind == topo::DocumentKind::kRcclTopology)
    out.push_back(info("topo_file.rccl_format", subject,
                       who +
                           " is RCCL's variant (version=\"2\"): RCCL on AMD GPUs loads it, NVIDIA "
                           "NCCL rejects it (\"XML Topology has wrong version 2, 1 needed\")"));
  out.push_back(info("topo_file.loaded", subject,
                     who + ": " + to_string(lt.kind) + ", " + std::to_string(t.numa_nodes.size()) +
                         " CPU/NUMA node(s), " + std::to_string(t.gpus.size()) + " GPU(s), " +
                         std::to_string(t.nics.size()) + " NIC(s)"));
  for (const auto& n : lt.notes)
    out.push_back(info("topo_file.unknown_element", subject, n + " (NCCL skips it too)"));
  if (lt.notes_left_out > 0)
    out.push_back(info("topo_file.unknown_element", subject,
                       std::to_string(lt.notes_left_out) +
                           " more unknown elements/attributes skipped, not listed (NCCL skips "
                           "them too)"));

  if (rdma_devices) {
    std::set<std::string> have(rdma_devices->begin(), rdma_devices->end());
    std::vector<std::string> absent;
    for (const auto& nic : t.nics)
      for (const auto& net : nic.nets)
        if (net.rdma() && !have.count(net.name)) absent.push_back(net.name);  // a socket net is no HCA
    if (!absent.empty()) {
      std::string names;
      for (const auto& a : absent) names += (names.empty() ? "" : ", ") + a;
      std::string present;
      for (const auto& h : have) present += (present.empty() ? "" : ", ") + h;
      out.push_back(warn("topo_file.net_absent", subject,
                         who + " names net(s) " + names +
                             " that this node does not have (RDMA "
                             "devices here: " +
                             (present.empty() ? "none" : present) +
                             "); NCCL's graph search then plans for NICs that are not there",
                         std::string("use the topology file of this node type, or ") + kDumpFix));
    }
  }
  if (f.pci_checked) {
    std::string absent;
    int count = 0;
    for (const auto& [id, present] : f.endpoint_present)
      if (!present) {
        absent += (absent.empty() ? "" : ", ") + id;
        ++count;
      }
    // Only GPUs and NICs are checked: cloud files (Azure) invent bridges (ffff:ff:01.0) that exist
    // in no sysfs by design.
    if (count > 0)
      out.push_back(warn("topo_file.bus_id_absent", subject,
                         who + " places " + std::to_string(count) +
                             " GPU/NIC bus id(s) that are not "
                             "in this node's /sys/bus/pci/devices: " +
                             absent +
                             "; NCCL attaches the real devices elsewhere and its locality is wrong",
                         std::string("compare with `lspci -D`; use the file of this VM size / "
                                     "hardware revision, or ") +
                             kDumpFix));
  }
  return out;
}

Json to_json(const TopoFileFacts& f) {
  Json missing = Json::array();
  for (const auto& [id, present] : f.endpoint_present)
    if (!present) missing.push_back(id);
  Json j = {{"path", f.path ? Json(*f.path) : Json(nullptr)},
            {"source", f.path ? Json(f.source) : Json(nullptr)},
            {"present", f.present},
            {"kind", f.loaded ? Json(to_string(f.loaded->kind)) : Json(nullptr)},
            {"version", f.loaded ? Json(f.loaded->version) : Json(nullptr)},
            {"error", f.error.empty() ? Json(nullptr) : Json(f.error)},
            {"pci_checked", f.pci_checked},
            {"missing_bus_ids", missing},
            {"notes", f.loaded ? Json(f.loaded->notes) : Json::array()},
            {"model", nullptr}};
  if (f.loaded && f.loaded->kind != topo::DocumentKind::kNcclGraph)
    j["model"] = topo::to_json(f.loaded->topology);
  if (f.loaded && f.loaded->notes_left_out > 0) j["notes_left_out"] = f.loaded->notes_left_out;
  return j;
}

}  // namespace fabkit::probes
