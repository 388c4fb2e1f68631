#include "topo/xml_input.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "common/file_reader.h"
#include "common/root_open.h"

namespace fabkit::topo {
namespace {

std::string compose(const std::string& file, int line, const std::string& element,
                    const std::string& detail) {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line);
  s += ": ";
  if (!element.empty()) s += "<" + element + ">: ";
  return s + detail;
}

// pugixml does not validate encodings (it passes bytes through), so a file saved as Latin-1 or a
// binary blob would parse "successfully". Hand-written because no packaged library we link does
// a plain UTF-8 check. Returns the offset of the first invalid byte, or npos.
size_t first_invalid_utf8(const std::string& s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xe  ? 3
                 : (c >> 3) == 0x1e ? 4
                                    : 0;
    if (len == 0 || c == 0xc0 || c == 0xc1 || c > 0xf4 || i + len > n) return i;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return i;
    if (len == 3) {  // reject overlongs and UTF-16 surrogates
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0)) return i;
    }
    if (len == 4) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90)) return i;
    }
    i += len;
  }
  return std::string::npos;
}

// The element the parser was in at offset: the last "<name" opened before it (a hint for syntax
// errors, where pugixml reports only an offset).
std::string element_near(const std::string& text, ptrdiff_t offset) {
  size_t end =
      static_cast<size_t>(std::clamp<ptrdiff_t>(offset, 0, static_cast<ptrdiff_t>(text.size())));
  size_t pos = end;
  while (pos > 0) {
    pos = text.rfind('<', pos - 1);
    if (pos == std::string::npos) break;
    if (pos + 1 < text.size() &&
        (std::isalpha(static_cast<unsigned char>(text[pos + 1])) || text[pos + 1] == '_')) {
      size_t e = pos + 1;
      while (e < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_' ||
              text[e] == '-' || text[e] == '.' || text[e] == ':'))
        ++e;
      return text.substr(pos + 1, std::min<size_t>(e - pos - 1, 64));
    }
    if (pos == 0) break;
  }
  return {};
}

std::string too_large(uintmax_t size) {
  return (size > kMaxTopoFileBytes ? std::to_string(size) + " bytes"
                                   : "more than " + std::to_string(kMaxTopoFileBytes) + " bytes") +
         ", over the " + std::to_string(kMaxTopoFileBytes >> 20) +
         " MiB cap for a topology file (real ones are KiB to a few MiB): not a topology file; "
         "give the NCCL_TOPO_DUMP_FILE or `lstopo --of xml` output of the node";
}

// Start tags ('<' then a name's first character) in the text, until one past `cap`: the offset of
// that one, or npos when there are at most `cap`. Comments and CDATA holding '<' count too, which
// errs on the side of refusing a document that is not a topology anyway.
size_t offset_past_element_cap(const std::string& t, size_t cap) {
  size_t count = 0;
  for (size_t p = t.find('<'); p != std::string::npos; p = t.find('<', p + 1)) {
    if (p + 1 >= t.size()) break;
    auto c = static_cast<unsigned char>(t[p + 1]);
    if (!(std::isalpha(c) || c == '_' || c == ':' || c >= 0x80)) continue;
    if (++count > cap) return p;
  }
  return std::string::npos;
}

}  // namespace

TopoParseError::TopoParseError(std::string file, int line, std::string element, std::string detail)
    : std::runtime_error(compose(file, line, element, detail)),
      file_(std::move(file)),
      line_(line),
      element_(std::move(element)),
      detail_(std::move(detail)) {}

int line_of_offset(const std::string& text, ptrdiff_t offset) {
  if (offset < 0) return 1;
  auto end = text.begin() + std::min<ptrdiff_t>(offset, static_cast<ptrdiff_t>(text.size()));
  return 1 + static_cast<int>(std::count(text.begin(), end, '\n'));
}

LineIndex::LineIndex(const std::string& text) {
  for (size_t p = text.find('\n'); p != std::string::npos; p = text.find('\n', p + 1))
    newlines_.push_back(static_cast<uint32_t>(p));
}

int LineIndex::line_of(ptrdiff_t offset) const {
  if (offset < 0) return 1;
  // Newlines before the offset, as line_of_offset counts them.
  if (offset > static_cast<ptrdiff_t>(UINT32_MAX)) offset = static_cast<ptrdiff_t>(UINT32_MAX);
  auto before = std::lower_bound(newlines_.begin(), newlines_.end(), static_cast<uint32_t>(offset));
  return 1 + static_cast<int>(before - newlines_.begin());
}

int XmlDocument::line_of(const pugi::xml_node& n) const { return lines.line_of(n.offset_debug()); }

std::string read_topo_file(const std::filesystem::path& path) {
  if (path_is_directory(path))
    throw TopoParseError(path.string(), 0, "", "is a directory, not an XML file");
  auto r = read_text(path, kMaxTopoFileBytes + 1);
  if (!ok(r)) throw TopoParseError(path.string(), 0, "", "cannot read: " + error(r).to_string());
  if (value(r).size() > kMaxTopoFileBytes) {
    // The read stopped one byte past the cap; the size itself, when the file has one (not a pipe).
    std::error_code ec;
    auto size = std::filesystem::file_size(path, ec);
    throw TopoParseError(path.string(), 0, "", too_large(ec ? 0 : size));
  }
  return value(r);
}

void parse_xml(const std::string& file, std::string text, XmlDocument& out) {
  out.file = file;
  out.text = std::move(text);
  const std::string& t = out.text;
  if (t.size() > kMaxTopoFileBytes) throw TopoParseError(file, 0, "", too_large(t.size()));
  if (t.find_first_not_of(" \t\r\n") == std::string::npos)
    throw TopoParseError(file, 0, "",
                         "the file is empty (0 elements); NCCL_TOPO_DUMP_FILE=FILE "
                         "writes a valid topology on a working node");
  size_t bad = first_invalid_utf8(t);
  if (bad != std::string::npos) {
    char hex[8];
    snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(t[bad]));
    throw TopoParseError(file, line_of_offset(t, static_cast<ptrdiff_t>(bad)),
                         element_near(t, static_cast<ptrdiff_t>(bad)),
                         std::string("byte ") + hex + " at offset " + std::to_string(bad) +
                             " is not valid UTF-8 (binary data or a non-UTF-8 encoding); save the "
                             "file as UTF-8");
  }
  if (size_t past = offset_past_element_cap(t, kMaxTopoXmlElements); past != std::string::npos)
    throw TopoParseError(file, line_of_offset(t, static_cast<ptrdiff_t>(past)),
                         element_near(t, static_cast<ptrdiff_t>(past) + 1),
                         "more than " + std::to_string(kMaxTopoXmlElements) +
                             " XML elements (a real topology has a few thousand at most): not "
                             "a topology file; give the NCCL_TOPO_DUMP_FILE or `lstopo --of xml` "
                             "output of the node");
  pugi::xml_parse_result res =
      out.doc.load_buffer(t.data(), t.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!res) {
    std::string why = res.description();
    if (res.status == pugi::status_end_element_mismatch ||
        res.status == pugi::status_bad_end_element ||
        static_cast<size_t>(res.offset) + 1 >= t.size())
      why += " (is the file truncated or an element left open?)";
    throw TopoParseError(file, line_of_offset(t, res.offset), element_near(t, res.offset),
                         "XML syntax error at offset " + std::to_string(res.offset) + ": " + why);
  }
  if (!out.doc.document_element()) throw TopoParseError(file, 0, "", "no XML element in the file");
  out.lines = LineIndex(t);
}

}  // namespace fabkit::topo
