#include "topo/nccl_topo_xml.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "topo/pci_bus_id.h"

namespace fabkit::topo {
namespace {

// Attributes NCCL/RCCL write per element; anything else is noted, not rejected (newer NCCL adds
// attributes, and NCCL itself ignores what it does not know).
const std::map<std::string, std::set<std::string>> kKnownAttrs = {
    {"system", {"version", "name"}},
    {"cpu", {"numaid", "affinity", "arch", "vendor", "familyid", "modelid", "host_hash"}},
    {"pci",
     {"busid", "class", "vendor", "device", "subsystem_vendor", "subsystem_device", "link_speed",
      "link_width", "vendor_name", "device_name"}},
    {"gpu", {"dev", "sm", "rank", "gdr", "gcn", "arch", "cudart_version", "cuda_driver"}},
    {"nvlink", {"target", "count", "tclass"}},
    {"xgmi", {"target", "count", "tclass"}},
    {"c2c", {"count", "bw"}},
    {"nic", {"name"}},
    {"net",
     {"name", "dev", "speed", "port", "latency", "guid", "maxconn", "gdr", "coll", "keep",
      "dmabuf"}},
};

class Parser {
 public:
  explicit Parser(const XmlDocument& d) : doc_(d) {}

  NcclTopoParse run() {
    pugi::xml_node root = doc_.doc.document_element();
    if (std::strcmp(root.name(), "system") != 0)
      fail(root, "root element is <" + std::string(root.name()) +
                     ">; an NCCL topology starts with <system version=\"1\">");
    check_attrs(root);
    out_.version = static_cast<int>(int_attr(root, "version", 0, 1000, true).value());
    if (out_.version == kNcclTopoXmlVersion) {
      out_.topology.source = "nccl-topology";
    } else if (out_.version == kRcclTopoXmlVersion) {
      out_.topology.source = "rccl-topology";
    } else {
      fail(root, "version=\"" + std::to_string(out_.version) +
                     "\" is not a topology version NCCL (" + std::to_string(kNcclTopoXmlVersion) +
                     ") or RCCL (" + std::to_string(kRcclTopoXmlVersion) + ") loads");
    }
    for (pugi::xml_node c : root.children()) {
      if (c.type() != pugi::node_element) continue;
      if (std::strcmp(c.name(), "cpu") == 0)
        cpu(c);
      else
        note(c, "unknown element under <system> skipped");
    }
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const pugi::xml_node& n, const std::string& detail) const {
    throw TopoParseError(doc_.file, doc_.line_of(n), n.name(), detail);
  }
  void note(const pugi::xml_node& n, const std::string& what) {
    if (out_.notes.size() >= kMaxTopoNotesListed) {
      ++out_.notes_left_out;
      return;
    }
    out_.notes.push_back("line " + std::to_string(doc_.line_of(n)) + ": <" + n.name() +
                         ">: " + what);
  }

  // The model caps (topology.h), checked as each element is added so the error names the first
  // one over.
  void check_cap(const pugi::xml_node& n, size_t have, size_t cap, const char* what) const {
    if (have >= cap)
      fail(n, "more than " + std::to_string(cap) + " " + what +
                  " in one topology (far above any real node): not a node's topology; give the "
                  "NCCL_TOPO_DUMP_FILE output of the node");
  }

  void check_attrs(const pugi::xml_node& n) {
    auto known = kKnownAttrs.find(n.name());
    for (pugi::xml_attribute a : n.attributes()) {
      if (std::strlen(a.value()) > kNcclMaxAttrLen)
        fail(n, std::string("attribute ") + a.name() + " is " +
                    std::to_string(std::strlen(a.value())) +
                    " bytes long; NCCL truncates values at " + std::to_string(kNcclMaxAttrLen));
      if (known != kKnownAttrs.end() && !known->second.count(a.name()))
        note(n, std::string("unknown attribute ") + a.name() + " ignored");
    }
  }

  std::string quoted(const pugi::xml_attribute& a) const {
    return std::string(a.name()) + "=\"" + a.value() + "\"";
  }

  // Integers as NCCL reads them (strtol base 0: decimal, 0x hex), but strictly: the whole value
  // must be a number inside [lo, hi]; NCCL itself would read "fast" as 0.
  std::optional<int64_t> int_attr(const pugi::xml_node& n, const char* name, int64_t lo, int64_t hi,
                                  bool required) {
    pugi::xml_attribute a = n.attribute(name);
    if (!a) {
      if (required) fail(n, std::string("missing required attribute ") + name);
      return std::nullopt;
    }
    const char* s = a.value();
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s, &end, 0);
    if (*s == '\0' || end == s || *end != '\0' || errno == ERANGE)
      fail(n, quoted(a) + " is not an integer");
    if (v < lo || v > hi)
      fail(n, quoted(a) + " is out of range: expected " + std::to_string(lo) + ".." +
                  std::to_string(hi));
    return v;
  }

  std::optional<uint64_t> hex_attr(const pugi::xml_node& n, const char* name, uint64_t max) {
    pugi::xml_attribute a = n.attribute(name);
    if (!a) return std::nullopt;
    std::string s = a.value();
    if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || s.size() > 18 ||
        s.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos)
      fail(n, quoted(a) + " is not a hexadecimal number (0x...)");
    uint64_t v = std::strtoull(s.c_str(), nullptr, 16);
    if (v > max) fail(n, quoted(a) + " is out of range (max " + std::to_string(max) + ")");
    return v;
  }

  std::optional<bool> bool_attr(const pugi::xml_node& n, const char* name) {
    auto v = int_attr(n, name, 0, 1, false);
    if (!v) return std::nullopt;
    return *v != 0;
  }

  std::string bus_id_attr(const pugi::xml_node& n, const char* name) {
    pugi::xml_attribute a = n.attribute(name);
    if (!a) fail(n, std::string("missing required attribute ") + name);
    auto id = normalize_bus_id(a.value());
    if (!id) fail(n, quoted(a) + " is not a PCI bus id (dddd:bb:dd.f)");
    return *id;
  }

  void cpu(const pugi::xml_node& n) {
    check_attrs(n);
    NumaNode numa;
    // NCCL writes numaid="-1" when the kernel does not know the node (sysfs numa_node -1).
    numa.os_index = static_cast<int>(int_attr(n, "numaid", -1, 4095, false).value_or(-1));
    numa.cpuset = n.attribute("affinity").value();
    for (char c : numa.cpuset) {
      if (c == ',') continue;
      if (!std::isxdigit(static_cast<unsigned char>(c)))
        fail(n, "affinity=\"" + numa.cpuset + "\" is not a comma-separated hex CPU mask");
      int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10;
      numa.cpu_count += __builtin_popcount(static_cast<unsigned>(d));
    }
    numa.cpu_vendor = n.attribute("vendor").value();
    int_attr(n, "familyid", 0, 1 << 20, false);
    int_attr(n, "modelid", 0, 1 << 20, false);
    check_cap(n, out_.topology.numa_nodes.size(), kMaxTopoNumaNodes, "<cpu> elements");
    out_.topology.numa_nodes.push_back(numa);

    PciNode root;
    root.kind = PciKind::kRoot;
    root.numa_node = numa.os_index;
    int idx = add_node(n, root);
    for (pugi::xml_node c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      if (std::strcmp(c.name(), "pci") == 0)
        pci(c, idx, 2);
      else if (std::strcmp(c.name(), "nic") == 0)
        nic(c, idx, "");
      else
        note(c, "unknown element under <cpu> skipped");
    }
  }

  int add_node(const pugi::xml_node& n, const PciNode& p) {
    check_cap(n, out_.topology.pci.size(), kMaxTopoPciNodes, "PCI nodes (<cpu> and <pci>)");
    out_.topology.pci.push_back(p);
    return static_cast<int>(out_.topology.pci.size()) - 1;
  }

  void pci(const pugi::xml_node& n, int parent, int depth) {
    if (depth > kMaxXmlDepth)
      fail(n, "PCI tree nested deeper than " + std::to_string(kMaxXmlDepth) + " levels");
    check_attrs(n);
    PciNode p;
    p.parent = parent;
    p.bus_id = bus_id_attr(n, "busid");
    auto [it, fresh] = seen_bus_ids_.emplace(p.bus_id, doc_.line_of(n));
    if (!fresh)
      fail(n, "busid " + p.bus_id + " already appears on line " + std::to_string(it->second));
    pugi::xml_attribute cls = n.attribute("class");
    if (auto v = hex_attr(n, "class", 0xffffff)) {
      // NCCL writes class+subclass+prog-if ("0x030200"); keep class+subclass.
      size_t digits = std::strlen(cls.value()) - 2;
      p.class_id = static_cast<uint32_t>(digits > 4 ? (*v >> 8) : *v);
    }
    p.vendor_id = static_cast<uint16_t>(hex_attr(n, "vendor", 0xffff).value_or(0));
    p.device_id = static_cast<uint16_t>(hex_attr(n, "device", 0xffff).value_or(0));
    hex_attr(n, "subsystem_vendor", 0xffff);
    hex_attr(n, "subsystem_device", 0xffff);
    p.link_speed = n.attribute("link_speed").value();
    p.link_width = static_cast<int>(int_attr(n, "link_width", 0, 32, false).value_or(0));

    pugi::xml_node gpu_el = n.child("gpu");
    pugi::xml_node nic_el = n.child("nic");
    bool has_pci_children = static_cast<bool>(n.child("pci"));
    const uint32_t base = p.class_id >> 8;
    p.kind = (p.class_id == 0x0604 || has_pci_children) && !gpu_el && !nic_el ? PciKind::kBridge
                                                                              : PciKind::kDevice;
    int idx = add_node(n, p);

    // NCCL's class dictionary: "0x03" prefix is a GPU, "0x02" a NIC (topo.cc kvDictPciClass).
    if (gpu_el || (base == 0x03 && !nic_el)) gpu(gpu_el, n, idx);
    bool nic_done = false;
    for (pugi::xml_node c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      std::string name = c.name();
      if (name == "pci") {
        pci(c, idx, depth + 1);
      } else if (name == "nic") {
        nic(c, idx, p.bus_id);
        nic_done = true;
      } else if (name != "gpu") {
        note(c, "unknown element under <pci> skipped");
      }
    }
    if (!nic_done && base == 0x02) {  // a NIC NCCL will fill in from the live system (Azure files)
      check_cap(n, out_.topology.nics.size(), kMaxTopoNics, "NICs");
      Nic nic_model;
      nic_model.pci = idx;
      nic_model.bus_id = p.bus_id;
      nic_model.class_id = p.class_id;
      out_.topology.nics.push_back(nic_model);
    }
  }

  void gpu(const pugi::xml_node& g, const pugi::xml_node& pci_el, int idx) {
    check_cap(g ? g : pci_el, out_.topology.gpus.size(), kMaxTopoGpus, "GPUs");
    const PciNode& p = out_.topology.pci[idx];
    Gpu gpu;
    gpu.pci = idx;
    gpu.bus_id = p.bus_id;
    gpu.vendor_id = p.vendor_id;
    gpu.device_id = p.device_id;
    if (g) {
      check_attrs(g);
      auto to_int = [](std::optional<int64_t> v) {
        return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
      };
      gpu.dev = to_int(int_attr(g, "dev", 0, 1023, false));
      gpu.sm = to_int(int_attr(g, "sm", 0, 100000, false));
      gpu.rank = to_int(int_attr(g, "rank", 0, 1 << 24, false));
      gpu.gdr = bool_attr(g, "gdr");
      for (pugi::xml_node l : g.children()) {
        if (l.type() != pugi::node_element) continue;
        std::string name = l.name();
        if (name == "nvlink" || name == "xgmi") {
          check_attrs(l);
          bus_id_attr(l, "target");
          int_attr(l, "count", 0, 64, true);
          hex_attr(l, "tclass", 0xffffff);
          ++gpu.nvlinks;
        } else if (name == "c2c") {
          check_attrs(l);
          int_attr(l, "count", 0, 64, false);
        } else {
          note(l, "unknown element under <gpu> skipped");
        }
      }
    }
    out_.topology.gpus.push_back(gpu);
  }

  void nic(const pugi::xml_node& n, int idx, const std::string& bus_id) {
    check_attrs(n);
    check_cap(n, out_.topology.nics.size(), kMaxTopoNics, "NICs");
    Nic nic_model;
    nic_model.pci = idx;
    nic_model.bus_id = bus_id;
    nic_model.class_id = out_.topology.pci[idx].class_id;
    for (pugi::xml_node c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      if (std::strcmp(c.name(), "net") != 0) {
        note(c, "unknown element under <nic> skipped");
        continue;
      }
      nic_model.nets.push_back(net(c));
    }
    out_.topology.nics.push_back(nic_model);
  }

  NcclNet net(const pugi::xml_node& n) {
    check_attrs(n);
    NcclNet net;
    net.name = n.attribute("name").value();
    if (net.name.empty()) fail(n, "missing required attribute name (the RDMA device, e.g. mlx5_0)");
    auto to_int = [](std::optional<int64_t> v) {
      return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
    };
    net.dev = to_int(int_attr(n, "dev", 0, 1 << 16, false));
    net.speed_mbps = int_attr(n, "speed", 1, kMaxNetSpeedMbps, false);
    net.port = to_int(int_attr(n, "port", 0, 255, false));
    net.gdr = bool_attr(n, "gdr");
    bool_attr(n, "coll");
    int_attr(n, "maxconn", 0, 1 << 24, false);
    if (pugi::xml_attribute lat = n.attribute("latency")) {
      char* end = nullptr;
      double v = std::strtod(lat.value(), &end);
      if (end == lat.value() || *end != '\0' || !std::isfinite(v) || v < 0 || v > 1e6)
        fail(n, quoted(lat) + " is not a latency in microseconds (a number >= 0)");
    }
    if (n.attribute("guid")) {
      hex_attr(n, "guid", UINT64_MAX);
      net.guid = n.attribute("guid").value();
    }
    return net;
  }

  const XmlDocument& doc_;
  NcclTopoParse out_;
  std::map<std::string, int> seen_bus_ids_;
};

}  // namespace

NcclTopoParse parse_nccl_topology(const XmlDocument& doc) { return Parser(doc).run(); }

}  // namespace fabkit::topo
