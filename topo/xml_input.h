// Reading an XML document the user handed us (NCCL_TOPO_FILE, `fabcheck topo FILE`): size cap,
// UTF-8 check, pugixml parse, and errors that name file, line and element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <pugixml.hpp>

namespace fabkit::topo {

// A topology/XML file that cannot be used. what() is "FILE:LINE: <element>: detail" (line 0 and
// no element when the problem is the whole file: unreadable, empty).
class TopoParseError : public std::runtime_error {
 public:
  TopoParseError(std::string file, int line, std::string element, std::string detail);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& element() const { return element_; }
  const std::string& detail() const { return detail_; }

 private:
  std::string file_;
  int line_;
  std::string element_;
  std::string detail_;
};

// Topology files are a few KiB (a 72-GPU NVL72 dump is ~200 KiB, an hwloc export of a 1792-thread
// machine ~3 MiB); anything this large is not one.
inline constexpr size_t kMaxTopoFileBytes = 16u << 20;
// XML elements (start tags) in one document, counted before pugixml builds its tree, whose nodes
// cost ~15x the bytes of a short tag: a 15 MB file of unknown elements took 5.9 GB (issue #36).
// The largest real documents have a few thousand (an hwloc export of a 1792-thread machine: PUs,
// cores, caches and PCI objects, ~15k); 2^18 is far above them and bounds the tree at ~20 MB.
inline constexpr size_t kMaxTopoXmlElements = 1u << 18;
// Deeper than any PCI tree (NCCL_TOPO_MAX_HOPS-sized paths are far shorter); bounds our recursion.
inline constexpr int kMaxXmlDepth = 64;

// 1-based line of a byte offset (scans the text: for one-off use, such as an error).
int line_of_offset(const std::string& text, ptrdiff_t offset);

// 1-based lines of many offsets in one text: the newline offsets are found once, then each
// lookup is a binary search. Rescanning from the start for each element made a 60k-element file
// take minutes (quadratic), which through NCCL_TOPO_FILE hung the Slurm health check.
class LineIndex {
 public:
  LineIndex() = default;
  explicit LineIndex(const std::string& text);
  int line_of(ptrdiff_t offset) const;

 private:
  // Offsets of every '\n', ascending; 32 bits, as parse_xml caps documents at kMaxTopoFileBytes
  // (half the memory on a file of newlines).
  std::vector<uint32_t> newlines_;
};
// Reads path (capped); throws TopoParseError when unreadable or too large.
std::string read_topo_file(const std::filesystem::path& path);

// A parsed document kept with its text so node offsets map back to lines.
struct XmlDocument {
  std::string file;
  std::string text;
  LineIndex lines;  // of text, built by parse_xml
  pugi::xml_document doc;
  int line_of(const pugi::xml_node& n) const;
};

// Validates UTF-8 and parses; throws TopoParseError for empty input, invalid bytes, XML syntax
// errors (truncated files, mismatched tags), with the line and the nearest element, and for text
// over kMaxTopoFileBytes or kMaxTopoXmlElements (before the tree is built).
void parse_xml(const std::string& file, std::string text, XmlDocument& out);

}  // namespace fabkit::topo
