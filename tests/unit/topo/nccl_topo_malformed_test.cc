// Bad input must become a TopoParseError naming file, line and element: never a crash or a
// silently half-read model.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/support/ttar.h"
#include "topo/topology_file.h"

namespace fabkit::topo {
namespace {

const char* kGood = R"(<system version="1">
  <cpu numaid="0" affinity="0000ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:08:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <pci busid="0000:0f:00.0" class="0x030200" vendor="0x10de" link_width="16">
        <gpu dev="0" sm="90" rank="0" gdr="1"/>
      </pci>
      <pci busid="0000:0c:00.0" class="0x020000" vendor="0x15b3">
        <nic>
          <net name="mlx5_0" dev="0" speed="200000" port="1" latency="0.000000" guid="0x1" maxconn="131072" gdr="1"/>
        </nic>
      </pci>
    </pci>
  </cpu>
</system>
)";

TopoParseError expect_error(const std::string& text) {
  try {
    load_topology_text("bad.xml", text);
  } catch (const TopoParseError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return TopoParseError("", 0, "", "");
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

TEST(NcclTopoMalformed, GoodBaselineParses) {
  LoadedTopology lt = load_topology_text("good.xml", kGood);
  ASSERT_EQ(lt.topology.gpus.size(), 1u);
  ASSERT_EQ(lt.topology.nics.size(), 1u);
  EXPECT_EQ(lt.topology.nics[0].nets[0].speed_mbps, 200000);
}

TEST(NcclTopoMalformed, SpeedNotANumberNamesLineElementAndValue) {
  TopoParseError e = expect_error(replace(kGood, "speed=\"200000\"", "speed=\"fast\""));
  EXPECT_EQ(e.line(), 9);
  EXPECT_EQ(e.element(), "net");
  EXPECT_NE(std::string(e.what()).find("bad.xml:9: <net>: speed=\"fast\" is not an integer"),
            std::string::npos)
      << e.what();
}

TEST(NcclTopoMalformed, AbsurdValues) {
  EXPECT_NE(expect_error(replace(kGood, "speed=\"200000\"", "speed=\"-5\""))
                .detail()
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(expect_error(replace(kGood, "speed=\"200000\"", "speed=\"99999999999999\""))
                .detail()
                .find("out of range"),
            std::string::npos);
  EXPECT_EQ(expect_error(replace(kGood, "dev=\"0\" sm", "dev=\"-1\" sm")).element(), "gpu");
  EXPECT_EQ(expect_error(replace(kGood, "link_width=\"16\">\n      <pci",
                                 "link_width=\"4096\">\n      <pci"))
                .element(),
            "pci");
  EXPECT_EQ(expect_error(replace(kGood, "gdr=\"1\"/>\n      </pci>", "gdr=\"2\"/>\n      </pci>"))
                .element(),
            "gpu");
  EXPECT_EQ(expect_error(replace(kGood, "latency=\"0.000000\"", "latency=\"nan\"")).element(),
            "net");
  EXPECT_EQ(expect_error(replace(kGood, "numaid=\"0\"", "numaid=\"-7\"")).element(), "cpu");
  EXPECT_EQ(expect_error(replace(kGood, "affinity=\"0000ffff\"", "affinity=\"all\"")).element(),
            "cpu");
  EXPECT_EQ(expect_error(replace(kGood, "class=\"0x030200\"", "class=\"gpu\"")).element(), "pci");
  EXPECT_EQ(expect_error(replace(kGood, "guid=\"0x1\"", "guid=\"0x1ffffffffffffffff\"")).element(),
            "net");
}

TEST(NcclTopoMalformed, BadBusIdAndDuplicate) {
  TopoParseError e = expect_error(replace(kGood, "0000:0f:00.0", "0000:0f:00"));
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.element(), "pci");
  TopoParseError d = expect_error(replace(kGood, "0000:0c:00.0", "0000:0F:00.0"));
  EXPECT_NE(d.detail().find("already appears on line 4"), std::string::npos) << d.what();
}

TEST(NcclTopoMalformed, MissingRequiredAttributes) {
  EXPECT_NE(
      expect_error(replace(kGood, "<system version=\"1\">", "<system>")).detail().find("version"),
      std::string::npos);
  EXPECT_EQ(expect_error(replace(kGood, "name=\"mlx5_0\" ", "")).element(), "net");
  EXPECT_EQ(expect_error(replace(kGood, "<pci busid=\"0000:08:00.0\"", "<pci")).element(), "pci");
}

TEST(NcclTopoMalformed, WrongVersionAndRoot) {
  EXPECT_NE(expect_error(replace(kGood, "version=\"1\"", "version=\"7\""))
                .detail()
                .find("not a topology version"),
            std::string::npos);
  TopoParseError e = expect_error("<foo/>");
  EXPECT_EQ(e.element(), "foo");
}

TEST(NcclTopoMalformed, EmptyAndWhitespaceFiles) {
  EXPECT_NE(expect_error("").detail().find("empty"), std::string::npos);
  EXPECT_NE(expect_error("  \n\n  ").detail().find("empty"), std::string::npos);
  EXPECT_NE(expect_error("<!-- only a comment -->").detail().find("XML"), std::string::npos);
}

TEST(NcclTopoMalformed, TruncatedFileReportsLineAndOpenElement) {
  std::string text = kGood;
  text = text.substr(0, text.find("<nic>") + 5);  // cut inside the document
  TopoParseError e = expect_error(text);
  EXPECT_GE(e.line(), 8);
  EXPECT_EQ(e.element(), "nic");
  EXPECT_NE(e.detail().find("truncated"), std::string::npos) << e.what();
}

TEST(NcclTopoMalformed, RealFileTruncatedMidAttribute) {
  std::ifstream in(testing::project_fixtures() / "real/nccl_topo/oci_BM.GPU.H100.8.xml");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str().substr(0, 5000);
  TopoParseError e = expect_error(text);
  EXPECT_GT(e.line(), 30);
  EXPECT_FALSE(e.element().empty());
}

TEST(NcclTopoMalformed, NonUtf8BytesNameTheOffsetAndLine) {
  std::string text = replace(kGood, "GenuineIntel", std::string("Genuine\xff\xfeIntel"));
  TopoParseError e = expect_error(text);
  EXPECT_EQ(e.line(), 2);
  EXPECT_NE(e.detail().find("0xff"), std::string::npos) << e.what();
  EXPECT_NE(e.detail().find("UTF-8"), std::string::npos);
  // Overlong encoding of '/' and a lone continuation byte are not UTF-8 either.
  EXPECT_NO_THROW(
      load_topology_text("ok.xml", replace(kGood, "GenuineIntel", "Genuine\xc3\xa9Intel")));
  expect_error(replace(kGood, "GenuineIntel", "Genuine\xc0\xafIntel"));
  expect_error(replace(kGood, "GenuineIntel", "Genuine\x80Intel"));
  expect_error(std::string("\x00\x01\x02", 3));
}

TEST(NcclTopoMalformed, DeepNestingIsRejectedNotRecursedForever) {
  std::string text = "<system version=\"1\"><cpu numaid=\"0\">";
  for (int i = 0; i < 200; ++i) {
    char bus[32];
    snprintf(bus, sizeof bus, "0000:%02x:%02x.0", i / 32, i % 32);
    text += std::string("<pci busid=\"") + bus + "\" class=\"0x060400\">";
  }
  for (int i = 0; i < 200; ++i) text += "</pci>";
  text += "</cpu></system>";
  EXPECT_NE(expect_error(text).detail().find("deeper"), std::string::npos);
}

TEST(NcclTopoMalformed, UnknownElementsAreNotedNotFatal) {
  LoadedTopology lt = load_topology_text("x.xml", replace(kGood, "<nic>", "<nic><future/>"));
  ASSERT_EQ(lt.notes.size(), 1u);
  EXPECT_NE(lt.notes[0].find("<future>"), std::string::npos);
}

TEST(NcclTopoMalformed, FileErrors) {
  testing::TempDir dir("topo-malformed");
  EXPECT_THROW(load_topology_file(dir.path() / "absent.xml"), TopoParseError);
  EXPECT_THROW(load_topology_file(dir.path()), TopoParseError);
  testing::write_file(dir.path() / "empty.xml", "");
  try {
    load_topology_file(dir.path() / "empty.xml");
    FAIL();
  } catch (const TopoParseError& e) {
    EXPECT_EQ(e.file(), (dir.path() / "empty.xml").string());
  }
}

TEST(HwlocXmlVersion, Version3SaysPlainlyThatHwloc2CannotImportIt) {
  TopoParseError e = expect_error(
      "<?xml version=\"1.0\"?>\n<topology version=\"3.0\">\n<object "
      "type=\"Machine\"/>\n</topology>\n");
  EXPECT_NE(e.detail().find("cannot import XML version 3.0"), std::string::npos) << e.what();
  EXPECT_EQ(e.line(), 2);
}

TEST(HwlocXmlVersion, BrokenHwloc2ExportIsAnErrorNotACrash) {
  TopoParseError e = expect_error("<topology version=\"2.0\"><object type=\"Banana\"/></topology>");
  EXPECT_NE(std::string(e.what()).find("hwloc"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace fabkit::topo

namespace fabkit::topo {
namespace {

// fuzz_topo_xml found that hwloc 2.9 dereferences NULL importing an object whose
// complete_cpuset attribute is misspelled; fabcheck must report it, not crash.
TEST(HwlocXmlVersion, ExportThatCrashesHwlocIsAnError) {
  std::ifstream in(testing::project_fixtures() / "real/hwloc/hwloc_24em64t-2n6c2t-pci.xml");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  auto pos = text.find("complete_cpuset=\"0x00800800\"");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 15, "cOmplete_cpuset");
  TopoParseError e = expect_error(text);
  EXPECT_NE(std::string(e.what()).find("hwloc"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace fabkit::topo
