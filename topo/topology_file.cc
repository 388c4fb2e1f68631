#include "topo/topology_file.h"

#include <cstring>

#include "topo/hwloc_topology.h"
#include "topo/nccl_topo_xml.h"

namespace fabkit::topo {

const char* to_string(DocumentKind k) {
  switch (k) {
    case DocumentKind::kNcclTopology:
      return "nccl-topology";
    case DocumentKind::kRcclTopology:
      return "rccl-topology";
    case DocumentKind::kNcclGraph:
      return "nccl-graph";
    case DocumentKind::kHwlocXml:
      return "hwloc-xml";
  }
  return "unknown";
}

namespace {

LoadedTopology from_document(const XmlDocument& doc) {
  LoadedTopology out;
  out.path = doc.file;
  pugi::xml_node root = doc.doc.document_element();
  out.version = root.attribute("version").value();
  std::string name = root.name();
  if (name == "system") {
    NcclTopoParse p = parse_nccl_topology(doc);
    out.kind = p.version == kRcclTopoXmlVersion ? DocumentKind::kRcclTopology
                                                : DocumentKind::kNcclTopology;
    out.topology = std::move(p.topology);
    out.notes = std::move(p.notes);
    out.notes_left_out = p.notes_left_out;
    return out;
  }
  if (name == "graphs") {
    out.kind = DocumentKind::kNcclGraph;
    for (pugi::xml_node g : root.children("graph")) {
      (void)g;
      ++out.graph_count;
    }
    return out;
  }
  if (name == "topology") {
    out.kind = DocumentKind::kHwlocXml;
    // hwloc 3.x writes version="3.0", which hwloc 2.x refuses ("cannot import XML version 3.0");
    // say so plainly instead of hwloc's silent -1.
    int major = std::atoi(out.version.c_str());
    if (major >= 3)
      throw TopoParseError(doc.file, doc.line_of(root), "topology",
                           "hwloc XML version " + out.version + " (written by hwloc " +
                               std::to_string(major) + ".x): this fabcheck uses hwloc " +
                               hwloc_runtime_version() + ", which cannot import XML version " +
                               out.version +
                               "; re-export the topology with an hwloc 2.x lstopo "
                               "(`lstopo --of xml topo.xml`)");
    try {
      out.topology = load_hwloc_xml_buffer(doc.text, doc.file);
    } catch (const HwlocError& e) {
      throw TopoParseError(doc.file, 0, "topology", e.what());
    }
    // The NCCL parser checks its caps element by element; hwloc builds its model at once.
    if (std::string over = topology_over_caps(out.topology); !over.empty())
      throw TopoParseError(doc.file, 0, "topology", over);
    return out;
  }
  throw TopoParseError(doc.file, doc.line_of(root), name,
                       "root element is neither <system> (NCCL topology), <graphs> (NCCL graph) "
                       "nor <topology> (hwloc export)");
}

}  // namespace

LoadedTopology load_topology_file(const std::filesystem::path& path) {
  XmlDocument doc;
  parse_xml(path.string(), read_topo_file(path), doc);
  return from_document(doc);
}

LoadedTopology load_topology_text(const std::string& file_label, std::string text) {
  XmlDocument doc;
  parse_xml(file_label, std::move(text), doc);
  return from_document(doc);
}

}  // namespace fabkit::topo
