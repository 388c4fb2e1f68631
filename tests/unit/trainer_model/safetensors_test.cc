#include <gtest/gtest.h>

#include <fstream>

#include "common/errors.h"
#include "tests/support/ttar.h"
#include "trainer/io/safetensors.h"

namespace fabkit::trainer {
namespace {
namespace fs = std::filesystem;

// Writes a safetensors file by hand: [u64 little-endian n][header][data].
void write_raw(const fs::path& p, const std::string& header, const std::string& data,
               int64_t length_override = -1) {
  uint64_t n = length_override >= 0 ? static_cast<uint64_t>(length_override) : header.size();
  std::ofstream out(p, std::ios::binary);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header << data;
}

std::string error_of(const fs::path& p) {
  try {
    SafetensorsFile f(p);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

class SafetensorsTest : public ::testing::Test {
 protected:
  testing::TempDir dir{"safetensors"};
  fs::path file(const std::string& n) { return dir.path() / n; }
};

TEST_F(SafetensorsTest, RoundTripEveryFloatDtype) {
  auto a = at::randn({3, 5});
  auto b = at::randn({7}).to(at::kBFloat16);
  auto c = at::randn({2, 2, 2}).to(at::kHalf);
  auto d = at::arange(6, at::kLong).reshape({2, 3});
  auto e = at::empty({0, 4});
  write_safetensors(file("m.safetensors"), {{"z.a", a}, {"b", b}, {"c", c}, {"d", d}, {"e", e}});
  SafetensorsFile f(file("m.safetensors"));
  EXPECT_TRUE(at::equal(f.tensor("z.a"), a));
  EXPECT_TRUE(at::equal(f.tensor("b"), b));
  EXPECT_EQ(f.tensor("b").scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(f.tensor("c"), c));
  EXPECT_TRUE(at::equal(f.tensor("d"), d));
  EXPECT_EQ(f.tensor("e").sizes(), e.sizes());
  EXPECT_EQ(f.header().metadata.at("format"), "pt");
  // HF-loadable layout: header padded to 8 bytes, tensors in name order in the header.
  EXPECT_EQ(f.header().header_bytes % 8, 0u);
  ASSERT_EQ(f.header().tensors.size(), 5u);
  EXPECT_EQ(f.header().tensors[0].name, "b");
  EXPECT_EQ(f.header().tensors[4].name, "z.a");
  EXPECT_FALSE(fs::exists(file("m.safetensors.tmp")));
}

TEST_F(SafetensorsTest, NonContiguousInputIsWrittenAsValues) {
  auto t = at::randn({4, 6}).t();
  write_safetensors(file("t.safetensors"), {{"t", t}});
  EXPECT_TRUE(at::equal(SafetensorsFile(file("t.safetensors")).tensor("t"), t));
}

TEST_F(SafetensorsTest, ShardedCheckpointThroughIndex) {
  std::vector<std::pair<std::string, at::Tensor>> ts;
  for (int i = 0; i < 5; ++i) ts.emplace_back("w" + std::to_string(i), at::randn({16, 16}));  // 1 KiB each
  auto files = write_safetensors_checkpoint(dir.path(), ts, 2100);
  ASSERT_EQ(files.size(), 4u);  // 3 shards (2+2+1 tensors) + index
  EXPECT_TRUE(fs::exists(dir.path() / "model-00001-of-00003.safetensors"));
  EXPECT_TRUE(fs::exists(dir.path() / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir.path() / "model.safetensors"));
  SafetensorsCheckpoint ck(dir.path());
  EXPECT_EQ(ck.names().size(), 5u);
  for (const auto& [n, t] : ts) EXPECT_TRUE(at::equal(ck.tensor(n), t)) << n;
  // Below the limit: one file, and the stale index is gone.
  write_safetensors_checkpoint(dir.path(), ts, 1ull << 30);
  EXPECT_TRUE(fs::exists(dir.path() / "model.safetensors"));
  EXPECT_FALSE(fs::exists(dir.path() / "model.safetensors.index.json"));
  EXPECT_TRUE(at::equal(SafetensorsCheckpoint(dir.path()).tensor("w3"), ts[3].second));
}

TEST_F(SafetensorsTest, IndexErrors) {
  testing::write_file(dir.path() / "model.safetensors.index.json", R"({"weight_map": {"a": "missing.safetensors"}})");
  try {
    SafetensorsCheckpoint ck(dir.path());
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.safetensors"), std::string::npos) << e.what();
  }
  write_safetensors(dir.path() / "s1.safetensors", {{"a", at::ones({2})}});
  testing::write_file(dir.path() / "model.safetensors.index.json", R"({"weight_map": {"b": "s1.safetensors"}})");
  EXPECT_THROW(SafetensorsCheckpoint{dir.path()}, UsageError);
  testing::write_file(dir.path() / "model.safetensors.index.json", R"({"weight_map": {"a": "../x"}})");
  EXPECT_THROW(SafetensorsCheckpoint{dir.path()}, UsageError);
  testing::write_file(dir.path() / "model.safetensors.index.json", "{}");
  EXPECT_THROW(SafetensorsCheckpoint{dir.path()}, UsageError);
}

TEST_F(SafetensorsTest, TruncatedFile) {
  write_safetensors(file("ok.safetensors"), {{"a", at::randn({64})}});
  auto size = fs::file_size(file("ok.safetensors"));
  fs::copy_file(file("ok.safetensors"), file("cut.safetensors"));
  fs::resize_file(file("cut.safetensors"), size - 10);
  std::string m = error_of(file("cut.safetensors"));
  EXPECT_NE(m.find("cut.safetensors"), std::string::npos) << m;
  EXPECT_NE(m.find("\"a\""), std::string::npos) << m;
  EXPECT_NE(m.find("beyond the end"), std::string::npos) << m;
  fs::resize_file(file("cut.safetensors"), 5);
  EXPECT_NE(error_of(file("cut.safetensors")).find("shorter than the 8-byte"), std::string::npos);
}

TEST_F(SafetensorsTest, HeaderLengthBeyondFile) {
  write_raw(file("h.safetensors"), "{}", "", 4096);
  std::string m = error_of(file("h.safetensors"));
  EXPECT_NE(m.find("header length at offset 0 is 4096"), std::string::npos) << m;
  write_raw(file("h2.safetensors"), "{}", "", int64_t{1} << 40);
  EXPECT_NE(error_of(file("h2.safetensors")).find("100 MB"), std::string::npos);
  write_raw(file("h3.safetensors"), "{}", "", 0);
  EXPECT_NE(error_of(file("h3.safetensors")).find("at least"), std::string::npos);
}

TEST_F(SafetensorsTest, BadJsonAndBadEntries) {
  struct Case {
    std::string header;
    std::string data;
    std::string expect;
  } cases[] = {
      {"{\"a\": ", "", "not valid JSON"},
      {"[1,2]", "", "must be a JSON object"},
      {R"({"a": {"dtype": "F32", "shape": [2]}})", "", "dtype, shape and data_offsets"},
      {R"({"a": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 8]}})", std::string(8, 'x'), "unknown dtype"},
      {R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", std::string(8, 'x'), "non-negative"},
      {R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", std::string(8, 'x'), "begin > end"},
      {R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}})", std::string(8, 'x'), "beyond the end"},
      {R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", std::string(8, 'x'), "needs 12 bytes"},
      {R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
       std::string(8, 'x'), "overlaps"},
      {R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", std::string(8, 'x'), "belong to no tensor"},
      {R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", std::string(8, 'x'), "belong to no tensor"},
      {R"({"__metadata__": {"format": 1}})", "", "not a string"},
  };
  int i = 0;
  for (const auto& c : cases) {
    fs::path p = file("bad" + std::to_string(i++) + ".safetensors");
    write_raw(p, c.header, c.data);
    std::string m = error_of(p);
    EXPECT_NE(m.find(c.expect), std::string::npos) << c.header << " -> " << m;
    EXPECT_NE(m.find(p.filename().string()), std::string::npos) << m;
  }
}

TEST_F(SafetensorsTest, ReadsHandWrittenUnpaddedFile) {
  // A file written by another writer: unpadded header, offsets in reverse name order.
  float v[3] = {1.5f, -2.0f, 3.25f};
  std::string data(reinterpret_cast<const char*>(v), sizeof v);
  write_raw(file("x.safetensors"),
            R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
            data);
  SafetensorsFile f(file("x.safetensors"));
  EXPECT_FLOAT_EQ(f.tensor("b").item<float>(), 1.5f);
  EXPECT_FLOAT_EQ(f.tensor("a")[1].item<float>(), 3.25f);
  EXPECT_THROW(f.tensor("c"), UsageError);
}

}  // namespace
}  // namespace fabkit::trainer
