// TensorBoard event files: CRC-32C against an independent bitwise implementation, the exact bytes
// of a record, and the files read back by the `tensorboard` package (tb_reader.py), which checks
// every record's CRCs with its own CRC code and decodes with TensorBoard's Event protobuf: a wrong
// CRC, field number or wire type fails the read-back.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "common/errors.h"
#include "tests/support/ttar.h"
#include "trainer/monitor/crc32c.h"
#include "trainer/monitor/event_writer.h"

namespace fabkit::trainer::monitor {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// The textbook bit-at-a-time CRC-32C (reflected polynomial 0x82F63B78): slow and independent of
// ISA-L's table/instruction code.
uint32_t bitwise_crc32c(const std::string& s) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

TEST(Crc32c, CheckValueAndAgreesWithBitwiseReference) {
  EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);  // the published CRC-32C check value
  EXPECT_EQ(crc32c("", 0), 0u);
  std::mt19937 rng(7);
  for (size_t n : {1, 3, 8, 15, 16, 17, 63, 64, 255, 256, 1000, 4097}) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    EXPECT_EQ(crc32c(s.data(), s.size()), bitwise_crc32c(s)) << "length " << n;
  }
}

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

TEST(EventProto, FileVersionEventBytes) {
  // Event{wall_time (1, fixed64) = 0.0, file_version (3, length-delimited) = "brain.Event:2"}.
  EXPECT_EQ(encode_file_version_event(0.0),
            bytes({0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x1a, 13}) + "brain.Event:2");
}

TEST(EventProto, ScalarEventBytes) {
  // wall_time 1.0 = 0x3FF0000000000000; step (2, varint) 300 = 0xAC 0x02; summary (5) holding one
  // value (1) {tag (1) "a", simple_value (2, fixed32) 1.0f = 0x3F800000}.
  EXPECT_EQ(encode_scalars_event(1.0, 300, {{"a", 1.0f}}),
            bytes({0x09, 0,  0,    0, 0,    0, 0,   0xf0, 0x3f, 0x10, 0xac, 0x02,
                   0x2a, 10, 0x0a, 8, 0x0a, 1, 'a', 0x15, 0,    0,    0x80, 0x3f}));
}

TEST(EventProto, TfRecordFrame) {
  const std::string data = "abc";
  const std::string f = frame_tfrecord(data);
  ASSERT_EQ(f.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(f.substr(0, 8), bytes({3, 0, 0, 0, 0, 0, 0, 0}));
  auto le32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= static_cast<uint32_t>(static_cast<unsigned char>(f[at + i])) << (8 * i);
    return v;
  };
  EXPECT_EQ(le32(8), mask_crc32c(bitwise_crc32c(f.substr(0, 8))));
  EXPECT_EQ(f.substr(12, 3), data);
  EXPECT_EQ(le32(15), mask_crc32c(bitwise_crc32c(data)));
}

TEST(EventWriter, FileNameHasTheTfeventsPattern) {
  EXPECT_EQ(event_file_name(1700000000, "node01", 4242),
            "events.out.tfevents.1700000000.node01.4242");
  EXPECT_EQ(event_file_name(1, "a/b", 2), "events.out.tfevents.1.a_b.2");
}

TEST(EventWriter, WriteErrorNamesThePath) {
  // /dev/full accepts the open and fails every write with ENOSPC.
  try {
    EventWriter::create_file("/dev/full");
    FAIL() << "writing to /dev/full succeeded";
  } catch (const SysErrorException& e) {
    EXPECT_NE(std::string(e.what()).find("write(/dev/full)"), std::string::npos) << e.what();
    EXPECT_EQ(e.error().err, ENOSPC);
  }
  testing::TempDir dir("tb_err");
  std::ofstream(dir.path() / "a_file") << "x";
  try {
    EventWriter::create_in(dir.path() / "a_file" / "tb");
    FAIL() << "created a directory under a regular file";
  } catch (const SysErrorException& e) {
    EXPECT_NE(std::string(e.what()).find((dir.path() / "a_file" / "tb").string()),
              std::string::npos)
        << e.what();
  }
}

TEST(EventWriter, TwoWritersInOneSecondGetTwoFiles) {
  testing::TempDir dir("tb_two");
  EventWriter a = EventWriter::create_in(dir.path());
  EventWriter b = EventWriter::create_in(dir.path());
  EXPECT_NE(a.path(), b.path());
  EXPECT_NE(b.path().filename().string().find("tfevents"), std::string::npos);
}

std::string shell_quoted(const std::string& s) { return "'" + s + "'"; }  // paths we made

// Runs tb_reader.py; returns its exit code and parsed stdout. Skips when the reader is missing.
int read_back(const fs::path& file, json* out, std::string* skip) {
  const std::string py = FABKIT_PYTHON;
  const std::string probe =
      " -c 'from tensorboard.backend.event_processing import event_accumulator'";
  if (std::system((shell_quoted(py) + probe + " >/dev/null 2>&1").c_str()) != 0) {
    *skip = "FABKIT_PYTHON=" + py +
            " cannot import tensorboard's event_accumulator (the reference reader; it needs "
            "tensorboard, protobuf, absl-py, numpy): install "
            "the pins with .venv/bin/pip install --no-deps -r scripts/python-requirements.txt";
    return -1;
  }
  const fs::path log = file.string() + ".reader.json";
  const std::string cmd = shell_quoted(py) + " " + shell_quoted(FABKIT_TB_READER_SCRIPT) + " " +
                          shell_quoted(file.string()) + " >" + shell_quoted(log.string()) + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    *out = json::parse(ss.str());
  } catch (const json::exception&) {
    ADD_FAILURE() << cmd << " printed no JSON:\n" << ss.str();
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -2;
}

TEST(EventWriter, TensorBoardReadsTheScalarsBack) {
  testing::TempDir dir("tb_read");
  const double before = wall_time_now_s();
  fs::path path;
  {
    EventWriter w = EventWriter::create_in(dir.path() / "tensorboard");
    path = w.path();
    for (int64_t step = 1; step <= 3; ++step)
      w.write_step(step, {2.5 / step, 1e-4 * step, 1000.0 * step, 0.5 + step, step * 1048576.0});
    w.write_step(4, {0.25, 3e-5, 4096, 0.125, -1});  // memory unknown: not written
    w.write_eval(4, 1.75);
    w.write_scalars(5000000000LL, {{"custom/x", -3.5f}});  // a step past 2^32
  }
  const double after = wall_time_now_s();
  EXPECT_EQ(path.parent_path(), dir.path() / "tensorboard");

  json r;
  std::string skip;
  int rc = read_back(path, &r, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_EQ(rc, 0) << r.dump();

  const json& rec = r.at("records");
  ASSERT_EQ(rec.size(), 7u) << r.dump();
  EXPECT_EQ(rec[0]["what"], "file_version");
  EXPECT_EQ(rec[0]["file_version"], "brain.Event:2");
  for (const json& e : rec) {
    EXPECT_GE(e["wall_time"].get<double>(), before - 1e-3);
    EXPECT_LE(e["wall_time"].get<double>(), after + 1e-3);
  }
  ASSERT_EQ(rec[1]["what"], "summary");
  EXPECT_EQ(rec[1]["step"], 1);
  ASSERT_EQ(rec[1]["values"].size(), 5u);
  const char* tags[] = {kTagLoss, kTagLr, kTagTokensPerS, kTagGradNorm, kTagMemoryMib};
  const double want[] = {2.5, 1e-4, 1000.0, 1.5, 1.0};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(rec[1]["values"][i]["tag"], tags[i]);
    EXPECT_EQ(rec[1]["values"][i]["kind"], "simple_value");
    EXPECT_FLOAT_EQ(rec[1]["values"][i]["simple_value"].get<float>(), static_cast<float>(want[i]))
        << tags[i];
  }
  EXPECT_EQ(rec[4]["values"].size(), 4u);  // no memory at step 4
  EXPECT_EQ(rec[6]["step"].get<int64_t>(), 5000000000LL);

  // What the scalar dashboard shows.
  const json& sc = r.at("scalars");
  ASSERT_TRUE(sc.contains(kTagLoss)) << r.dump();
  ASSERT_EQ(sc[kTagLoss].size(), 4u);
  EXPECT_EQ(sc[kTagLoss][2]["step"], 3);
  EXPECT_FLOAT_EQ(sc[kTagLoss][2]["value"].get<float>(), static_cast<float>(2.5 / 3));
  ASSERT_EQ(sc[kTagMemoryMib].size(), 3u);
  ASSERT_EQ(sc[kTagEvalLoss].size(), 1u);
  EXPECT_EQ(sc[kTagEvalLoss][0]["step"], 4);
  EXPECT_FLOAT_EQ(sc[kTagEvalLoss][0]["value"].get<float>(), 1.75f);
  EXPECT_FLOAT_EQ(sc["custom/x"][0]["value"].get<float>(), -3.5f);
}

// A text summary (the pipeline's schedule): the text dashboard finds it under its tag, a scalar
// string at its step, byte for byte (UTF-8 and newlines included).
TEST(EventWriter, TensorBoardReadsATextSummaryBack) {
  testing::TempDir dir("tb_text");
  fs::path path;
  const std::string text = "```\nrank 0 | F0 F1 .  B0 W0\n```\nbubble 1/9 \xc2\xb7 ok";
  {
    EventWriter w = EventWriter::create_in(dir.path() / "tensorboard");
    path = w.path();
    w.write_text(0, kTagPipelineSchedule, text);
    w.write_step(1, {2.5, 1e-4, 1000.0, 0.5, -1});
  }
  json r;
  std::string skip;
  int rc = read_back(path, &r, &skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  ASSERT_EQ(rc, 0) << r.dump();
  const json& texts = r.at("texts");
  ASSERT_TRUE(texts.contains(kTagPipelineSchedule)) << r.dump();
  ASSERT_EQ(texts[kTagPipelineSchedule].size(), 1u);
  const json& t = texts[kTagPipelineSchedule][0];
  EXPECT_EQ(t["step"], 0);
  EXPECT_EQ(t["shape"].size(), 0u);  // a scalar
  ASSERT_EQ(t["text"].size(), 1u);
  EXPECT_EQ(t["text"][0].get<std::string>(), text);
  EXPECT_EQ(r.at("scalars").at(kTagLoss).size(), 1u);  // the scalars beside it are untouched
}

// The read-back above only proves the CRCs when the reader checks them: a file with one wrong
// CRC byte must be refused.
TEST(EventWriter, TensorBoardRefusesACorruptedCrc) {
  testing::TempDir dir("tb_crc");
  fs::path path;
  {
    EventWriter w = EventWriter::create_in(dir.path());
    path = w.path();
    w.write_eval(1, 2.0);
  }
  for (const char* which : {"length", "data"}) {
    std::string content;
    {
      std::ifstream in(path, std::ios::binary);
      content.assign(std::istreambuf_iterator<char>(in), {});
    }
    // Second record: its length CRC sits 8 bytes in; its data CRC is the file's last 4 bytes.
    const size_t first = 8 + 4 + encode_file_version_event(0).size() + 4;
    const size_t at = std::string(which) == "length" ? first + 8 : content.size() - 1;
    content[at] = static_cast<char>(content[at] ^ 0x01);
    const fs::path bad = dir.path() / (std::string("events.out.tfevents.bad_") + which);
    std::ofstream(bad, std::ios::binary) << content;
    json r;
    std::string skip;
    int rc = read_back(bad, &r, &skip);
    if (!skip.empty()) GTEST_SKIP() << skip;
    EXPECT_EQ(rc, 3) << which << ": " << r.dump();
    EXPECT_NE(r.value("data_loss", "").find("crc"), std::string::npos) << r.dump();
  }
}

}  // namespace
}  // namespace fabkit::trainer::monitor
