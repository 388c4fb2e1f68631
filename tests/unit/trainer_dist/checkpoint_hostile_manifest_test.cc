// A checkpoint written by someone else (fabtrain export runs as root on a user's checkpoint):
// every offset, size, count and path its manifest and shard headers give is checked against the
// checkpoint directory's real files before anything is read, and refused by file and field.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <sstream>
#include <thread>

#include "common/errors.h"
#include "tests/support/ttar.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/checkpoint/shard_file.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

constexpr const char* kShard = "rank-00000-of-00001.bin";

// A 1-rank checkpoint of two units ("w" [3,2] and "b" [3] in u0, "v" [5] in u1).
fs::path make_checkpoint(const fs::path& output) {
  std::vector<FlatShard> s;
  s.push_back(make_flat_shard("u0", {{"w", {3, 2}, 0, 0}, {"b", {3}, 0, 0}}, 0, 1));
  s.push_back(make_flat_shard("u1", {{"v", {5}, 0, 0}}, 0, 1));
  for (auto& sh : s)
    for (size_t i = 0; i < sh.param.size(); ++i) sh.param[i] = static_cast<float>(i) + 1.0f;
  auto comm = make_local_comm();
  auto opt = make_adamw(s, {});
  SaveRequest req{output, {}, Json::object(), "", 0};
  req.state.step = 1;
  return save_checkpoint(*comm, req, s, *opt, nullptr);
}

Json read_json(const fs::path& f) {
  std::ifstream in(f);
  return Json::parse(in);
}

void edit_manifest(const fs::path& ckpt, const std::function<void(Json&)>& edit) {
  Json m = read_json(ckpt / "manifest.json");
  edit(m);
  fabkit::testing::write_file(ckpt / "manifest.json", m.dump(1));
}

// Makes the manifest's shards[0] vouch for `file` (its size and SHA-256), as a hostile writer
// would: the hash only proves the writer had the file.
void vouch_for(const fs::path& ckpt, const fs::path& file, const std::string& listed_as) {
  edit_manifest(ckpt, [&](Json& m) {
    m["shards"][0] = {
        {"file", listed_as}, {"bytes", fs::file_size(file)}, {"sha256", sha256_file(file)}};
  });
}

// A shard file with the given header (units/arrays as read_shard_file expects) and data bytes.
void write_raw_shard(const fs::path& f, const Json& header, size_t data_bytes) {
  const std::string text = header.dump();
  const uint64_t len = text.size();
  std::string bytes = "FABSHRD1";
  bytes.append(reinterpret_cast<const char*>(&len), sizeof len);
  bytes += text;
  bytes.append(data_bytes, '\x01');
  fabkit::testing::write_file(f, bytes);
}

// A one-unit shard header whose only array has this count.
Json header_with_count(const Json& count) {
  Json array = {{"name", "param"}, {"count", count}};
  Json unit = {{"unit", "u0"}, {"arrays", Json::array({array})}};
  return {{"units", Json::array({unit})}};
}

std::string gather_error(const fs::path& ckpt) {
  try {
    gather_checkpoint(ckpt);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

void expect_names(const std::string& m, std::initializer_list<std::string> parts) {
  for (const auto& p : parts)
    EXPECT_NE(m.find(p), std::string::npos) << "missing \"" << p << "\" in: " << m;
}

// fn's UsageError text; another exception (std::length_error from a wrapped count) says so.
std::string usage_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(other exception) ") + e.what();
  }
  return "(no UsageError)";
}

// The same on a thread, for readers handed a FIFO: one that blocks in open(2) waiting for a
// writer (what the old readers did) is released after 5 s by opening the FIFO's other end, as
// often as it takes, and the result says it blocked. (Not fork: LocalSpawn's test leaves a
// pthread_atfork handler that ends every forked child.)
std::string usage_error_with_fifo(const std::function<void()>& fn, const fs::path& fifo) {
  std::promise<std::string> result;
  std::future<std::string> done = result.get_future();
  std::thread t([&] { result.set_value(usage_error_of(fn)); });
  std::string blocked;
  if (done.wait_for(std::chrono::seconds(5)) == std::future_status::timeout) {
    blocked = "(blocked on the FIFO for 5 s) ";
    while (done.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout) {
      const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (w >= 0) ::close(w);
    }
  }
  t.join();
  return blocked + done.get();
}

class HostileCheckpoint : public ::testing::Test {
 public:
  HostileCheckpoint() : dir_("ckpt_hostile"), ckpt_(make_checkpoint(dir_.path() / "out")) {}
  std::string manifest() const { return (ckpt_ / "manifest.json").string(); }
  fabkit::testing::TempDir dir_;
  fs::path ckpt_;
};

TEST_F(HostileCheckpoint, AnUntouchedCheckpointGathers) {
  auto g = gather_checkpoint(ckpt_);
  ASSERT_EQ(g.params.size(), 3u);
  EXPECT_EQ(g.params[2].second.values, (std::vector<float>{1, 2, 3, 4, 5}));
}

// Used to copy the bytes after the unit's buffer (heap memory) into the tensor, and so into
// model.safetensors.
TEST_F(HostileCheckpoint, AParameterOffsetPastItsUnitIsRefused) {
  edit_manifest(ckpt_, [](Json& m) { m["units"][0]["params"][1]["offset"] = 1000; });
  expect_names(gather_error(ckpt_),
               {manifest(), "units[0].params[1]", "\"b\"", "offset 1000", "outside"});
}

TEST_F(HostileCheckpoint, ANegativeParameterOffsetIsRefused) {
  edit_manifest(ckpt_, [](Json& m) { m["units"][1]["params"][0]["offset"] = -4; });
  expect_names(gather_error(ckpt_), {manifest(), "units[1].params[0]", "offset -4"});
}

// 2^62+1 x 4 wraps to 4 elements in 64 bits: the old product let a huge shape through.
TEST_F(HostileCheckpoint, AShapeWhoseElementCountWrapsIsRefused) {
  edit_manifest(ckpt_, [](Json& m) {
    m["units"][1]["params"][0]["shape"] = {4611686018427387905ull, 4};
  });
  expect_names(gather_error(ckpt_), {manifest(), "units[1].params[0].shape", "more elements"});
}

// Overlapping spans would copy a unit as often as the manifest lists it: memory without bound.
TEST_F(HostileCheckpoint, OverlappingParametersAreRefused) {
  edit_manifest(ckpt_, [](Json& m) { m["units"][0]["params"][1]["offset"] = 0; });
  expect_names(gather_error(ckpt_), {manifest(), "units[0]", "overlapping"});
}

TEST_F(HostileCheckpoint, AnAbsoluteShardPathIsRefused) {
  // A valid shard outside the checkpoint, vouched for by size and hash.
  const fs::path elsewhere = dir_.path() / "elsewhere" / kShard;
  fs::create_directories(elsewhere.parent_path());
  fs::copy_file(ckpt_ / kShard, elsewhere);
  vouch_for(ckpt_, elsewhere, elsewhere.string());
  expect_names(gather_error(ckpt_), {manifest(), "shards[0].file", "is an absolute path"});
}

TEST_F(HostileCheckpoint, ADotDotShardPathIsRefused) {
  const fs::path elsewhere = dir_.path() / "elsewhere" / kShard;
  fs::create_directories(elsewhere.parent_path());
  fs::copy_file(ckpt_ / kShard, elsewhere);
  vouch_for(ckpt_, elsewhere, std::string("../../elsewhere/") + kShard);
  expect_names(gather_error(ckpt_), {manifest(), "shards[0].file", "'..'"});
}

TEST_F(HostileCheckpoint, AShardSymlinkLeadingOutOfTheCheckpointIsRefused) {
  const fs::path elsewhere = dir_.path() / "elsewhere" / kShard;
  fs::create_directories(elsewhere.parent_path());
  fs::rename(ckpt_ / kShard, elsewhere);
  fs::create_symlink(elsewhere, ckpt_ / kShard);
  expect_names(gather_error(ckpt_), {(ckpt_ / kShard).string(), "shards[0].file"});
  EXPECT_NE(gather_error(ckpt_).find("outside"), std::string::npos) << gather_error(ckpt_);
}

// One shard listed twice (once as "./NAME") would be read, and held, twice.
TEST_F(HostileCheckpoint, AShardListedTwiceIsRefused) {
  edit_manifest(ckpt_, [](Json& m) {
    Json again = m["shards"][0];
    again["file"] = std::string("./") + kShard;
    m["shards"].push_back(again);
  });
  expect_names(gather_error(ckpt_), {manifest(), "shards[1].file", "listed before"});
}

// count x 4 bytes wrapped to 4 for count 2^62+1, passed the size check, and the vector of
// 2^62+1 floats then threw std::length_error (an internal error, not bad input).
TEST_F(HostileCheckpoint, AShardArrayCountThatWrapsTheSizeCheckIsRefused) {
  write_raw_shard(ckpt_ / kShard, header_with_count(4611686018427387905ull), 16);
  vouch_for(ckpt_, ckpt_ / kShard, kShard);
  const std::string m = usage_error_of([&] { gather_checkpoint(ckpt_); });
  expect_names(m, {(ckpt_ / kShard).string(), "u0/param", "count 4611686018427387905",
                   "only 16 bytes follow"});
}

TEST_F(HostileCheckpoint, ANegativeShardArrayCountIsRefused) {
  write_raw_shard(ckpt_ / kShard, header_with_count(-1), 16);
  const std::string m = usage_error_of([&] { read_shard_file(ckpt_ / kShard); });
  expect_names(m,
               {(ckpt_ / kShard).string(), "u0/param", "count -1", "not a non-negative integer"});
}

// A FIFO used to block the open for ever.
TEST_F(HostileCheckpoint, AManifestThatIsAFifoIsRefusedAtOnce) {
  fs::remove(ckpt_ / "manifest.json");
  ASSERT_EQ(::mkfifo((ckpt_ / "manifest.json").c_str(), 0600), 0) << std::strerror(errno);
  expect_names(usage_error_with_fifo([&] { gather_checkpoint(ckpt_); }, ckpt_ / "manifest.json"),
               {manifest(), "is a FIFO"});
}

TEST_F(HostileCheckpoint, AShardThatIsAFifoIsRefusedAtOnce) {
  fs::remove(ckpt_ / kShard);
  ASSERT_EQ(::mkfifo((ckpt_ / kShard).c_str(), 0600), 0) << std::strerror(errno);
  expect_names(usage_error_with_fifo([&] { gather_checkpoint(ckpt_); }, ckpt_ / kShard),
               {(ckpt_ / kShard).string(), "is a FIFO"});
}

// Resume reads the same manifests (as the job's user, but the job may be root): a shard path
// leading out of the checkpoint makes it skipped, not loaded.
TEST_F(HostileCheckpoint, ResumeSkipsACheckpointWhoseShardLeadsOutOfIt) {
  const fs::path elsewhere = dir_.path() / "elsewhere" / kShard;
  fs::create_directories(elsewhere.parent_path());
  fs::copy_file(ckpt_ / kShard, elsewhere);
  vouch_for(ckpt_, elsewhere, std::string("../../elsewhere/") + kShard);
  std::vector<FlatShard> s;
  s.push_back(make_flat_shard("u0", {{"w", {3, 2}, 0, 0}, {"b", {3}, 0, 0}}, 0, 1));
  s.push_back(make_flat_shard("u1", {{"v", {5}, 0, 0}}, 0, 1));
  auto comm = make_local_comm();
  auto opt = make_adamw(s, {});
  std::vector<std::string> warnings;
  EXPECT_FALSE(resume_latest(*comm, dir_.path() / "out", s, *opt, &warnings).has_value());
  ASSERT_EQ(warnings.size(), 1u);
  expect_names(warnings[0], {"shards[0].file", "'..'"});
}

}  // namespace
}  // namespace fabkit::trainer
