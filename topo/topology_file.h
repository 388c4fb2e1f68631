// One entry point for "a topology file the user gave us": sniffs the root element and loads an
// NCCL/RCCL topology (<system>), an hwloc XML export (<topology>), or recognises an NCCL graph
// file (<graphs>, what NCCL_GRAPH_FILE takes: channel orderings, not hardware).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "topo/topology.h"
#include "topo/xml_input.h"

namespace fabkit::topo {

enum class DocumentKind { kNcclTopology, kRcclTopology, kNcclGraph, kHwlocXml };
const char* to_string(
    DocumentKind k);  // "nccl-topology", "rccl-topology", "nccl-graph", "hwloc-xml"

struct LoadedTopology {
  std::string path;
  DocumentKind kind = DocumentKind::kNcclTopology;
  std::string version;             // the root's version attribute as written
  Topology topology;               // empty for a graph file
  int graph_count = 0;             // graph files: <graph> elements
  std::vector<std::string> notes;  // skipped unknown elements/attributes
  size_t notes_left_out = 0;       // more of them, not listed (kMaxTopoNotesListed)
};

// Throws TopoParseError (file:line:element) for unreadable or malformed input, and for input over
// the caps (kMaxTopoFileBytes, kMaxTopoXmlElements, kMaxTopoGpus ...); an hwloc export hwloc
// cannot import also becomes a TopoParseError naming the file.
LoadedTopology load_topology_file(const std::filesystem::path& path);
// The same from text already in memory (tests, fuzzing).
LoadedTopology load_topology_text(const std::string& file_label, std::string text);

}  // namespace fabkit::topo
