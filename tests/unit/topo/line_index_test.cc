// LineIndex (topo/xml_input.h): the line of every offset, as the one-off scan line_of_offset
// gives it, without rescanning the text per lookup.
#include <gtest/gtest.h>

#include <string>

#include "topo/xml_input.h"

namespace fabkit::topo {
namespace {

TEST(LineIndex, AgreesWithTheScanAtEveryOffset) {
  for (const std::string& text : {std::string(), std::string("\n"), std::string("abc"),
                                  std::string("a\nb\n\nccc\n"), std::string("\n\nx")}) {
    LineIndex index(text);
    for (ptrdiff_t off = -2; off <= static_cast<ptrdiff_t>(text.size()) + 2; ++off)
      EXPECT_EQ(index.line_of(off), line_of_offset(text, off))
          << "offset " << off << " in '" << text << "'";
  }
}

TEST(LineIndex, NodesOfAParsedDocumentGetTheirLines) {
  XmlDocument doc;
  parse_xml("t.xml",
            "<system version=\"1\">\n  <cpu numaid=\"0\">\n\n    <pci busid=\"0000:01:00.0\"/>\n  "
            "</cpu>\n</system>\n",
            doc);
  auto cpu = doc.doc.document_element().child("cpu");
  EXPECT_EQ(doc.line_of(doc.doc.document_element()), 1);
  EXPECT_EQ(doc.line_of(cpu), 2);
  EXPECT_EQ(doc.line_of(cpu.child("pci")), 4);
}

}  // namespace
}  // namespace fabkit::topo
