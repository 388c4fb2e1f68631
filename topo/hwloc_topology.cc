#include "topo/hwloc_topology.h"

#include <hwloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "topo/pci_bus_id.h"
#include "topo/xml_input.h"

namespace fabkit::topo {

const char* const kHwlocSkippedComponents[6] = {"cuda", "nvml",      "opencl",
                                                "rsmi", "levelzero", "gl"};

namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

[[noreturn]] void hwloc_fail(const std::string& call, const std::string& object) {
  throw HwlocError(call + "(" + object + ") failed: " + std::strerror(errno) + " (hwloc " +
                   hwloc_runtime_version() + ")");
}

TopologyPtr init_topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) hwloc_fail("hwloc_topology_init", "");
  TopologyPtr t(raw);
  // KEEP_ALL for bridges: path levels count the switches between GPU and NIC, and the
  // "important" filter could drop a switch whose only child is an unimportant device.
  if (hwloc_topology_set_io_types_filter(t.get(), HWLOC_TYPE_FILTER_KEEP_ALL) != 0)
    hwloc_fail("hwloc_topology_set_io_types_filter", "KEEP_ALL");
  for (const char* c : kHwlocSkippedComponents) {
    // A component that is not built into this hwloc is already absent: the return value only
    // says whether the name was recorded, so it is deliberately not checked.
    (void)hwloc_topology_set_components(t.get(), HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, c);
  }
  return t;
}

int first_numa(hwloc_const_nodeset_t ns) {
  // Local to exactly one NUMA node, else unknown (an object attached to the whole machine).
  if (!ns || hwloc_bitmap_weight(ns) != 1) return -1;
  return hwloc_bitmap_first(ns);
}

std::string bitmap_string(hwloc_const_bitmap_t b) {
  char* s = nullptr;
  if (hwloc_bitmap_asprintf(&s, b) < 0 || !s) return {};
  std::string out = s;
  free(s);
  return out;
}

class Converter {
 public:
  explicit Converter(hwloc_topology_t t) : t_(t) {}

  Topology run(const std::string& source) {
    out_.source = source;
    hwloc_obj_t numa = nullptr;
    while ((numa = hwloc_get_next_obj_by_type(t_, HWLOC_OBJ_NUMANODE, numa))) {
      NumaNode n;
      n.os_index = static_cast<int>(numa->os_index);
      n.cpuset = bitmap_string(numa->cpuset);
      n.cpu_count = numa->cpuset ? hwloc_bitmap_weight(numa->cpuset) : 0;
      if (numa->attr) n.memory_bytes = numa->attr->numanode.local_memory;
      if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t_, HWLOC_OBJ_PACKAGE, numa))
        if (const char* v = hwloc_obj_get_info_by_name(pkg, "CPUVendor")) n.cpu_vendor = v;
      out_.numa_nodes.push_back(n);
    }
    // Bridges first (parents before children in hwloc's DFS order), then devices.
    hwloc_obj_t obj = nullptr;
    while ((obj = hwloc_get_next_bridge(t_, obj))) add_pci_object(obj);
    obj = nullptr;
    while ((obj = hwloc_get_next_pcidev(t_, obj))) {
      int idx = add_pci_object(obj);
      const auto& pa = obj->attr->pcidev;
      if (is_gpu_pci(pa.vendor_id, pa.device_id, pa.class_id)) {
        Gpu g;
        g.pci = idx;
        g.bus_id = out_.pci[idx].bus_id;
        g.vendor_id = pa.vendor_id;
        g.device_id = pa.device_id;
        if (const char* v = hwloc_obj_get_info_by_name(obj, "PCIDevice")) g.name = v;
        out_.gpus.push_back(g);
      }
    }
    add_link_distances();
    obj = nullptr;
    std::map<int, size_t> nic_of_pci;
    while ((obj = hwloc_get_next_osdev(t_, obj))) {
      auto type = obj->attr->osdev.type;
      // The GPU's model, when only its NVML/CUDA OS device names it (hwloc's GPU backends).
      if (int g = gpu_of(obj); g >= 0 && out_.gpus[static_cast<size_t>(g)].name.empty())
        if (const char* v = hwloc_obj_get_info_by_name(obj, "GPUModel"))
          out_.gpus[static_cast<size_t>(g)].name = v;
      if (type != HWLOC_OBJ_OSDEV_NETWORK && type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
      hwloc_obj_t parent = obj->parent;
      if (!parent || parent->type != HWLOC_OBJ_PCI_DEVICE) continue;  // virtual: veth, bridges
      int idx = index_of(parent);
      if (idx < 0) continue;
      auto [it, fresh] = nic_of_pci.emplace(idx, out_.nics.size());
      if (fresh) {
        Nic n;
        n.pci = idx;
        n.bus_id = out_.pci[idx].bus_id;
        n.class_id = out_.pci[idx].class_id;
        out_.nics.push_back(n);
      }
      Nic& n = out_.nics[it->second];
      (type == HWLOC_OBJ_OSDEV_OPENFABRICS ? n.rdma_devices : n.netdevs)
          .push_back(obj->name ? obj->name : "");
    }
    return std::move(out_);
  }

 private:
  // The GPU an object of a distances matrix stands for: the NVML/RSMI OS device under the GPU's
  // PCI device, or that PCI device itself.
  int gpu_of(hwloc_obj_t o) const {
    if (o && o->type == HWLOC_OBJ_OS_DEVICE) o = o->parent;
    if (!o || o->type != HWLOC_OBJ_PCI_DEVICE) return -1;
    const int pci = index_of(o);
    for (size_t g = 0; g < out_.gpus.size(); ++g)
      if (out_.gpus[g].pci == pci && pci >= 0) return static_cast<int>(g);
    return -1;
  }

  std::string peer_name(hwloc_obj_t o) const {
    if (int g = gpu_of(o); g >= 0) return out_.gpus[static_cast<size_t>(g)].bus_id;
    if (o->type == HWLOC_OBJ_OS_DEVICE && o->parent) o = o->parent;
    if (o->type == HWLOC_OBJ_PCI_DEVICE) {  // an NVSwitch
      const auto& pa = o->attr->pcidev;
      return format_pci_address({pa.domain, pa.bus, pa.dev, pa.func});
    }
    return std::string(hwloc_obj_type_string(o->type)) + ":" + std::to_string(o->os_index);
  }

  // hwloc's NVML backend records the NVLink bandwidth between GPUs (and to POWER CPUs or
  // NVSwitches) as a distances matrix named NVLinkBandwidth (MB/s; RSMI: XGMIBandwidth); an XML
  // export keeps it. The diagonal is the GPU's own memory bandwidth, not a link.
  void add_link_distances() {
    for (const char* name : {"NVLinkBandwidth", "XGMIBandwidth"}) {
      unsigned nr = 0;
      if (hwloc_distances_get_by_name(t_, name, &nr, nullptr, 0) != 0 || nr == 0) continue;
      std::vector<hwloc_distances_s*> all(nr, nullptr);
      if (hwloc_distances_get_by_name(t_, name, &nr, all.data(), 0) != 0) continue;
      for (unsigned k = 0; k < nr; ++k) {
        const hwloc_distances_s* d = all[k];
        for (unsigned i = 0; d && i < d->nbobjs; ++i) {
          const int g = gpu_of(d->objs[i]);
          if (g < 0) continue;
          Gpu& gpu = out_.gpus[static_cast<size_t>(g)];
          for (unsigned j = 0; j < d->nbobjs; ++j) {
            const uint64_t v = d->values[i * d->nbobjs + j];
            if (j == i || v == 0 || !d->objs[j]) continue;
            gpu.link_peers.push_back({peer_name(d->objs[j]), v, name});
          }
          gpu.nvlinks = static_cast<int>(gpu.link_peers.size());
        }
        hwloc_distances_release(t_, all[k]);
      }
    }
  }

  int index_of(hwloc_obj_t o) const {
    auto it = index_.find(o);
    return it == index_.end() ? -1 : it->second;
  }

  int add_pci_object(hwloc_obj_t o) {
    if (int i = index_of(o); i >= 0) return i;
    PciNode p;
    hwloc_obj_t parent = o->parent;
    if (parent && (parent->type == HWLOC_OBJ_BRIDGE || parent->type == HWLOC_OBJ_PCI_DEVICE))
      p.parent = add_pci_object(parent);
    if (o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
      p.kind = PciKind::kRoot;
      hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(t_, o);
      p.numa_node = cpu_side ? first_numa(cpu_side->nodeset) : -1;
    } else {
      const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pa =
          o->type == HWLOC_OBJ_BRIDGE ? o->attr->bridge.upstream.pci : o->attr->pcidev;
      p.kind = o->type == HWLOC_OBJ_BRIDGE ? PciKind::kBridge : PciKind::kDevice;
      p.bus_id = format_pci_address({pa.domain, pa.bus, pa.dev, pa.func});
      p.class_id = pa.class_id;
      p.vendor_id = pa.vendor_id;
      p.device_id = pa.device_id;
      if (pa.linkspeed > 0) p.link_speed = std::to_string(pa.linkspeed) + " GB/s";
      if (p.parent < 0) {  // no host bridge above (hwloc attaches some devices directly)
        hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(t_, o);
        p.numa_node = cpu_side ? first_numa(cpu_side->nodeset) : -1;
      }
    }
    out_.pci.push_back(p);
    int idx = static_cast<int>(out_.pci.size()) - 1;
    index_[o] = idx;
    return idx;
  }

  hwloc_topology_t t_;
  Topology out_;
  std::map<hwloc_obj_t, int> index_;
};

// hwloc 2.9's XML importer dereferences NULL on some malformed exports (fuzz_topo_xml found one: an
// object with cpuset but without complete_cpuset crashes in hwloc_bitmap_compare_first). A user's
// file must never crash fabcheck, so the import is tried first in a child process; only a clean
// import there is repeated here. Costs one fork and a second parse of a file of a few KiB.
void import_in_child_first(const std::string& xml_text, const std::string& label) {
  pid_t pid = fork();
  if (pid < 0) return;  // cannot fork: fall through to the direct import (the old behaviour)
  if (pid == 0) {
    // Default dispositions so a crash is a signal the parent sees, not a sanitizer/fuzzer report.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
    hwloc_topology_t t = nullptr;
    int rc = 1;
    if (hwloc_topology_init(&t) == 0) {
      hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
      if (hwloc_topology_set_xmlbuffer(t, xml_text.c_str(),
                                       static_cast<int>(xml_text.size()) + 1) == 0 &&
          hwloc_topology_load(t) == 0)
        rc = 0;
    }
    _exit(rc);  // no destructors/atexit handlers of the parent's state in the child
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    throw HwlocError(label + ": hwloc " + hwloc_runtime_version() + " crashed (signal " +
                     std::to_string(WTERMSIG(status)) +
                     ") importing this XML: the export is malformed (hand-edited or truncated); "
                     "re-export it with `lstopo --of xml FILE`");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw HwlocError(label + ": hwloc " + hwloc_runtime_version() +
                     " could not import this XML export; set HWLOC_XML_VERBOSE=1 and run "
                     "`lstopo --if xml --input FILE` to see hwloc's reason");
}

}  // namespace

std::string hwloc_runtime_version() {
  unsigned v = hwloc_get_api_version();
  return std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + "." +
         std::to_string(v & 0xff);
}

Topology load_live_hwloc_topology() {
  TopologyPtr t = init_topology();
  if (hwloc_topology_load(t.get()) != 0) hwloc_fail("hwloc_topology_load", "this machine");
  return Converter(t.get()).run("hwloc-live");
}

Topology load_hwloc_xml_buffer(const std::string& xml_text, const std::string& label) {
  TopologyPtr t = init_topology();
  if (xml_text.size() > static_cast<size_t>(INT32_MAX - 1)) throw HwlocError(label + ": too large");
  import_in_child_first(xml_text, label);
  // hwloc's buffer length includes the terminating NUL.
  if (hwloc_topology_set_xmlbuffer(t.get(), xml_text.c_str(),
                                   static_cast<int>(xml_text.size()) + 1) != 0)
    hwloc_fail("hwloc_topology_set_xmlbuffer", label);
  if (hwloc_topology_load(t.get()) != 0)
    throw HwlocError(label + ": hwloc " + hwloc_runtime_version() +
                     " could not import this XML export (hwloc_topology_load: " +
                     std::strerror(errno) + "); set HWLOC_XML_VERBOSE=1 to see hwloc's reason");
  return Converter(t.get()).run("hwloc-xml");
}

}  // namespace fabkit::topo
