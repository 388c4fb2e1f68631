// The plugin's ELF file read without loading it: the API versions it defines, the version text it
// carries, and every kind of broken file as a named error (never a crash).
#include <gtest/gtest.h>

#include <functional>

#include "probes/nccl_net/nccl_net_facts.h"
#include "tests/support/ttar.h"
#include "tests/unit/nccl_net/plugin_builder.h"

namespace fabkit::probes {
namespace {

using fabkit::testing::build_fake_library;
using fabkit::testing::FakeLibrary;
using fabkit::testing::read_bytes;
using fabkit::testing::TempDir;

// Real version texts (tests/fixtures/nccl_net/README.md).
const char* kOfi191 = "NET/OFI Initializing aws-ofi-nccl 1.9.1-aws";  // aws/aws-k8s-tester#454

std::string built(const FakeLibrary& lib) {
  TempDir dir("plugin-elf");
  auto so = dir.path() / "libnccl-net.so";
  build_fake_library(lib, so);
  return read_bytes(so);
}

void put16(std::string& b, size_t at, uint16_t v) {
  b[at] = char(v & 0xff);
  b[at + 1] = char(v >> 8);
}
void put64(std::string& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = char((v >> (8 * i)) & 0xff);
}

TEST(PluginElf, ReadsDefinedApiVersionsAndVersionText) {
  auto lib = read_elf_library_bytes(built({{6, 7, 8}, {8}, {}, kOfi191}), version_markers());
  ASSERT_FALSE(lib.error) << *lib.error;
  EXPECT_EQ(lib.net_api_versions, (std::vector<int>{6, 7, 8}));
  EXPECT_EQ(lib.collnet_api_versions, (std::vector<int>{8}));
  EXPECT_EQ(lib.machine, host_elf_machine());
  ASSERT_EQ(lib.rodata_versions.size(), 1u);
  EXPECT_EQ(lib.rodata_versions[0], "aws-ofi-nccl 1.9.1-aws");
  LibraryFile f;
  f.path = "/opt/amazon/ofi-nccl/lib/libnccl-net.so";
  f.elf = lib;
  classify_library(f);
  EXPECT_EQ(f.kind, "aws-ofi-nccl");
  EXPECT_EQ(f.version, "1.9.1-aws");
}

TEST(PluginElf, ImportedSymbolIsNotAnOfferedVersion) {
  // A library that merely references ncclNetPlugin_v9 (undefined, an import) offers only v5.
  auto lib = read_elf_library_bytes(built({{5}, {}, {9}, ""}), version_markers());
  ASSERT_FALSE(lib.error) << *lib.error;
  EXPECT_EQ(lib.net_api_versions, (std::vector<int>{5}));
}

TEST(PluginElf, TcpxVersionTextLosesItsEmptySuffix) {
  // google/nccl-plugin-gpudirecttcpx src/net_tcpx.cc: "NET/" PRODUCT_NAME " ver. " with
  // TCPX_VERSION_STRING "3.1.9." (empty TCPX_SUFFIX after the last dot).
  auto lib = read_elf_library_bytes(built({{7}, {}, {}, "NET/GPUDirectTCPX ver. 3.1.9."}),
                                    version_markers());
  LibraryFile f;
  f.elf = lib;
  classify_library(f);
  EXPECT_EQ(f.kind, "gpudirect-tcpx");
  EXPECT_EQ(f.version, "3.1.9");
}

TEST(PluginElf, EveryTruncationIsANamedError) {
  std::string whole = built({{8}, {}, {}, kOfi191});
  ASSERT_FALSE(read_elf_library_bytes(whole, version_markers()).error);
  // The section header table sits at the end of the file: any cut loses some of it.
  for (size_t len = 0; len < whole.size(); len += 97) {
    auto lib = read_elf_library_bytes(whole.substr(0, len), version_markers());
    ASSERT_TRUE(lib.error) << "cut at " << len;
    EXPECT_FALSE(lib.error->empty());
  }
  auto lib = read_elf_library_bytes(whole.substr(0, 40), version_markers());
  EXPECT_NE(lib.error->find("past the end of the file"), std::string::npos) << *lib.error;
}

TEST(PluginElf, HostileHeadersAreRefusedByName) {
  std::string whole = built({{8}, {}, {}, kOfi191});
  ASSERT_EQ(whole[4], 2) << "the test expects a 64-bit build";
  struct Case {
    const char* what;
    std::function<void(std::string&)> edit;
    const char* expect;
  } cases[] = {
      {"not ELF", [](std::string& b) { b[1] = 'X'; }, "not an ELF file"},
      {"big-endian", [](std::string& b) { b[5] = 2; }, "big-endian"},
      {"class 3", [](std::string& b) { b[4] = 3; }, "neither 32 nor 64-bit"},
      {"an executable", [](std::string& b) { put16(b, 16, 2); }, "not a shared object"},
      {"section table past the end", [](std::string& b) { put64(b, 40, ~uint64_t(0) - 8); },
       "past the end of the file"},
      {"no section headers", [](std::string& b) { put16(b, 60, 0); }, "no section header table"},
      {"odd entry size", [](std::string& b) { put16(b, 58, 63); }, "expected 64"},
  };
  for (const auto& c : cases) {
    std::string b = whole;
    c.edit(b);
    auto lib = read_elf_library_bytes(b, version_markers());
    ASSERT_TRUE(lib.error) << c.what;
    EXPECT_NE(lib.error->find(c.expect), std::string::npos) << c.what << ": " << *lib.error;
  }
}

TEST(PluginElf, HugeDynsymSizeIsRefusedNotAllocated) {
  std::string b = built({{8}, {}, {}, kOfi191});
  uint64_t shoff = 0;
  for (int i = 0; i < 8; ++i) shoff |= uint64_t(uint8_t(b[40 + i])) << (8 * i);
  uint16_t shnum = uint16_t(uint8_t(b[60]) | (uint8_t(b[61]) << 8));
  bool patched = false;
  for (uint16_t i = 0; i < shnum; ++i) {
    size_t at = size_t(shoff) + size_t(i) * 64;
    if (uint8_t(b[at + 4]) == 11) {  // SHT_DYNSYM
      put64(b, at + 32, uint64_t(1) << 40);
      patched = true;
    }
  }
  ASSERT_TRUE(patched);
  auto lib = read_elf_library_bytes(b, version_markers());
  ASSERT_TRUE(lib.error);
  EXPECT_NE(lib.error->find("refused as hostile or corrupt"), std::string::npos) << *lib.error;
}

TEST(PluginElf, VersionTextNeedsADigitAfterTheMarker) {
  // A URL or a sentence naming the package is no version.
  const char kText[] = "see https://github.com/aws/aws-ofi-nccl \0Using aws-ofi-nccl 1.5.0aws\0";
  auto v = find_version_texts(std::string(kText, sizeof kText - 1), version_markers());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], "aws-ofi-nccl 1.5.0aws");
}

}  // namespace
}  // namespace fabkit::probes
