// NCCL's topology XML (what NCCL_TOPO_FILE names and NCCL_TOPO_DUMP_FILE writes): <system
// version="1"> / <cpu numaid affinity ...> / <pci busid class ...> (nested switches) / <gpu dev sm
// rank gdr> with <nvlink>, <nic> / <net name dev speed port guid gdr ...>. RCCL writes the same
// shape with version="2", GPUs under class 0x1200 and <xgmi> links. Parsed with pugixml; every
// attribute is type- and range-checked so a bad file fails here with file:line:element instead
// of NCCL silently falling back to defaults.
#pragma once

#include <string>
#include <vector>

#include "topo/topology.h"
#include "topo/xml_input.h"

namespace fabkit::topo {

// The topology XML versions NCCL and RCCL accept (NCCL_TOPO_XML_VERSION in src/graph/xml.h).
inline constexpr int kNcclTopoXmlVersion = 1;
inline constexpr int kRcclTopoXmlVersion = 2;
// NCCL keeps attribute values in 255-byte buffers (MAX_STR_LEN) and truncates longer ones.
inline constexpr size_t kNcclMaxAttrLen = 255;
// Plausibility bound for a net speed: 10 Tb/s, far above any single port (800G today).
inline constexpr int64_t kMaxNetSpeedMbps = 10'000'000;

// Notes kept about skipped elements/attributes: a real file has a handful (a newer NCCL's
// attribute on every <pci> a few dozen); past this they are counted, not kept, so a file of
// unknown elements costs no memory per element beyond pugixml's tree (issue #36).
inline constexpr size_t kMaxTopoNotesListed = 64;

struct NcclTopoParse {
  int version = 0;
  Topology topology;               // source "nccl-topology" or "rccl-topology"
  std::vector<std::string> notes;  // unknown elements/attributes, skipped as NCCL does
  size_t notes_left_out = 0;       // further ones past kMaxTopoNotesListed, counted only
};

// doc's root must be <system>. Throws TopoParseError naming file, line, element, attribute, value.
NcclTopoParse parse_nccl_topology(const XmlDocument& doc);

}  // namespace fabkit::topo
