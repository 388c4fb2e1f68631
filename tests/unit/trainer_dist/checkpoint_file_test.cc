#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/errors.h"
#include "tests/support/ttar.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/checkpoint/shard_file.h"

namespace fs = std::filesystem;

namespace fabkit::trainer {
namespace {

std::vector<FlatShard> tiny_shards() {
  std::vector<FlatShard> s;
  s.push_back(make_flat_shard("u0", {{"w", {3, 2}, 0, 0}, {"b", {3}, 0, 0}}, 0, 1));
  s.push_back(make_flat_shard("u1", {{"v", {5}, 0, 0}}, 0, 1));
  for (auto& sh : s) {
    for (size_t i = 0; i < sh.param.size(); ++i) sh.param[i] = 0.5f * static_cast<float>(i) + 1.0f;
  }
  return s;
}

TEST(ShardFile, RoundTripsAndRejectsTruncation) {
  fabkit::testing::TempDir dir("ckpt");
  ShardFileUnit u{"u0", {{"param", {1, 2, 3}}, {"exp_avg", {4, 5, 6}}}};
  const fs::path f = dir.path() / "s.bin";
  write_shard_file(f, {{"rank", 0}}, {u});
  auto c = read_shard_file(f);
  ASSERT_EQ(c.units.size(), 1u);
  EXPECT_EQ(c.units[0].arrays[1].name, "exp_avg");
  EXPECT_EQ(c.units[0].arrays[1].values, (std::vector<float>{4, 5, 6}));
  fs::resize_file(f, fs::file_size(f) - 4);
  try {
    read_shard_file(f);
    FAIL();
  } catch (const UsageError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(f.string()), std::string::npos) << m;
    EXPECT_NE(m.find("offset"), std::string::npos) << m;
    EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  }
}

TEST(Checkpoint, ResumeTakesTheNewestCompleteAndSkipsCorruptOnes) {
  fabkit::testing::TempDir dir("ckpt");
  auto comm = make_local_comm();
  auto shards = tiny_shards();
  auto opt = make_adamw(shards, {});
  SaveRequest req{dir.path(), {}, Json::object(), "", 0};
  req.state.step = 2;
  save_checkpoint(*comm, req, shards, *opt, nullptr);
  shards[0].param[0] = 42.0f;
  req.state.step = 4;
  save_checkpoint(*comm, req, shards, *opt, nullptr);
  // An incomplete step-6 checkpoint: shard written, no manifest.
  fs::create_directories(dir.path() / "checkpoint-00000006");
  ASSERT_EQ(list_checkpoints(dir.path()).size(), 2u);

  // Corrupt the step-4 shard: resume falls back to step 2 with a warning naming why.
  {
    std::fstream f(dir.path() / "checkpoint-00000004" / "rank-00000-of-00001.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x7f');
  }
  auto fresh = tiny_shards();
  fresh[0].param[0] = -1.0f;
  auto opt2 = make_adamw(fresh, {});
  std::vector<std::string> warnings;
  auto st = resume_latest(*comm, dir.path(), fresh, *opt2, &warnings);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->step, 2);
  EXPECT_EQ(fresh[0].param[0], 1.0f);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("SHA-256"), std::string::npos) << warnings[0];
  EXPECT_THROW(gather_checkpoint(dir.path() / "checkpoint-00000004"), UsageError);
  EXPECT_THROW(gather_checkpoint(dir.path() / "checkpoint-00000006"), UsageError);
}

TEST(Checkpoint, SaveTotalLimitPrunesOldestAndGatherRebuildsTensors) {
  fabkit::testing::TempDir dir("ckpt");
  auto comm = make_local_comm();
  auto shards = tiny_shards();
  auto opt = make_adamw(shards, {});
  SaveRequest req{dir.path(), {}, Json::object(), "", 2};
  std::vector<std::string> warnings;
  for (int64_t step : {1, 2, 3}) {
    req.state.step = step;
    save_checkpoint(*comm, req, shards, *opt, &warnings);
  }
  auto left = list_checkpoints(dir.path());
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].filename(), "checkpoint-00000003");
  EXPECT_FALSE(fs::exists(dir.path() / "checkpoint-00000001"));
  auto g = gather_checkpoint(left[0]);
  ASSERT_EQ(g.params.size(), 3u);
  EXPECT_EQ(g.params[1].first, "b");
  EXPECT_EQ(g.params[1].second.values, (std::vector<float>{4.0f, 4.5f, 5.0f}));
  EXPECT_EQ(g.params[0].second.shape, (std::vector<int64_t>{3, 2}));
}

// A checkpoint large enough that a small filesystem holds one copy of it, not two.
std::vector<FlatShard> big_shards(float value) {
  std::vector<FlatShard> s;
  s.push_back(make_flat_shard("u0", {{"w", {512, 512}, 0, 0}}, 0, 1));
  for (auto& sh : s) std::fill(sh.param.begin(), sh.param.end(), value);
  return s;
}

uintmax_t bytes_under(const fs::path& dir) {
  uintmax_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A re-save of an existing step replaces it whole: the new contents, nothing left beside it.
TEST(Checkpoint, ResaveOfAStepReplacesItWhole) {
  fabkit::testing::TempDir dir("ckpt_resave");
  auto comm = make_local_comm();
  SaveRequest req{dir.path(), {}, Json::object(), "", 0};
  req.state.step = 7;
  auto shards = big_shards(1.0f);
  auto opt = make_adamw(shards, {});
  save_checkpoint(*comm, req, shards, *opt, nullptr);
  shards = big_shards(2.0f);
  save_checkpoint(*comm, req, shards, *opt, nullptr);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"checkpoint-00000007"});
  EXPECT_EQ(entries(dir.path() / "checkpoint-00000007"),
            (std::vector<std::string>{"manifest.json", "rank-00000-of-00001.bin"}));
  auto g = gather_checkpoint(dir.path() / "checkpoint-00000007");
  EXPECT_EQ(g.params[0].second.values[0], 2.0f);
}

// Issue #19, item 10: re-saving step N (--no-resume) on a full disk used to remove the old
// manifest first and leave no usable checkpoint. On a real full filesystem (a tmpfs the size of
// one checkpoint and a half, mounted in a mount namespace of this test process), the failed
// re-save must leave the old step loadable and its disk space free again.
TEST(Checkpoint, FailedResaveOnAFullDiskKeepsTheOldCheckpoint) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  if (::unshare(CLONE_NEWNS) != 0)
    GTEST_SKIP() << "no private mount namespace (unshare: " << std::strerror(errno) << ")";
  ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0)
      << std::strerror(errno);

  fabkit::testing::TempDir probe("ckpt_size");
  auto comm = make_local_comm();
  SaveRequest req{probe.path(), {}, Json::object(), "", 0};
  req.state.step = 5;
  auto shards = big_shards(1.0f);
  auto opt = make_adamw(shards, {});
  save_checkpoint(*comm, req, shards, *opt, nullptr);
  const uintmax_t one = bytes_under(probe.path());
  ASSERT_GT(one, 2u << 20) << "the checkpoint should dwarf the filesystem's own overhead";

  fabkit::testing::TempDir dir("ckpt_full");
  const fs::path out = dir.path() / "out";
  fs::create_directories(out);
  const std::string size = "size=" + std::to_string(one + one / 2);
  ASSERT_EQ(::mount("tmpfs", out.c_str(), "tmpfs", 0, size.c_str()), 0) << std::strerror(errno);
  struct Unmount {
    fs::path p;
    ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
  } unmount{out};

  req.output_dir = out;
  save_checkpoint(*comm, req, shards, *opt, nullptr);  // fits
  shards = big_shards(2.0f);
  try {
    save_checkpoint(*comm, req, shards, *opt, nullptr);  // a second copy does not
    FAIL() << "the re-save fit: the filesystem is not full enough to test anything";
  } catch (const SysErrorException& e) {
    EXPECT_EQ(e.error().err, ENOSPC) << e.what();
  }
  // The old checkpoint is whole and is what a resume finds; the failed attempt left nothing.
  EXPECT_EQ(entries(out), std::vector<std::string>{"checkpoint-00000005"});
  auto fresh = big_shards(0.0f);
  auto opt2 = make_adamw(fresh, {});
  std::vector<std::string> warnings;
  auto st = resume_latest(*comm, out, fresh, *opt2, &warnings);
  ASSERT_TRUE(st.has_value()) << "no usable checkpoint left";
  EXPECT_EQ(st->step, 5);
  EXPECT_TRUE(warnings.empty()) << warnings[0];
  EXPECT_EQ(fresh[0].param[0], 1.0f);

  // With room again, the re-save goes through and replaces it.
  const std::string bigger = "size=" + std::to_string(3 * one);
  ASSERT_EQ(::mount("tmpfs", out.c_str(), "tmpfs", MS_REMOUNT, bigger.c_str()), 0)
      << std::strerror(errno);
  save_checkpoint(*comm, req, shards, *opt, nullptr);
  EXPECT_EQ(entries(out), std::vector<std::string>{"checkpoint-00000005"});
  EXPECT_EQ(gather_checkpoint(out / "checkpoint-00000005").params[0].second.values[0], 2.0f);
}

// A crash between the two renames of a filesystem without RENAME_EXCHANGE leaves the old step
// under .checkpoint-N.old: resume puts it back.
TEST(Checkpoint, ResumeRecoversAStepLeftAsideByAnInterruptedSwap) {
  fabkit::testing::TempDir dir("ckpt_swap");
  auto comm = make_local_comm();
  SaveRequest req{dir.path(), {}, Json::object(), "", 0};
  req.state.step = 3;
  auto shards = tiny_shards();
  auto opt = make_adamw(shards, {});
  save_checkpoint(*comm, req, shards, *opt, nullptr);
  fs::rename(dir.path() / "checkpoint-00000003", dir.path() / ".checkpoint-00000003.old");
  ASSERT_TRUE(list_checkpoints(dir.path()).empty());
  auto fresh = tiny_shards();
  auto opt2 = make_adamw(fresh, {});
  auto st = resume_latest(*comm, dir.path(), fresh, *opt2, nullptr);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->step, 3);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"checkpoint-00000003"});
}

}  // namespace
}  // namespace fabkit::trainer

namespace fabkit::trainer {
namespace {

// Resharding: the old ranks' slices concatenated are the padded unit, whatever the old world
// size; every new rank gets exactly its slice, padding 0.
TEST(Reslice, RecutsAnyOldWorldSizeIntoAnyNewOne) {
  std::vector<ParamSlot> params{{"a", {3, 3}, 0, 0}, {"b", {4}, 0, 0}};  // 13 values
  for (int old_world : {1, 2, 3, 5}) {
    std::vector<std::vector<float>> old;
    for (int r = 0; r < old_world; ++r) {
      FlatShard s = make_flat_shard("u", params, r, old_world);
      for (int64_t i = 0; i < s.valid_numel(); ++i) s.param[i] = static_cast<float>(s.begin() + i + 1);
      old.push_back(s.param);
    }
    std::vector<const std::vector<float>*> views;
    for (const auto& o : old) views.push_back(&o);
    for (int new_world : {1, 2, 4}) {
      for (int r = 0; r < new_world; ++r) {
        FlatShard s = make_flat_shard("u", params, r, new_world);
        std::vector<float> expect(s.shard_numel, 0.0f);
        for (int64_t i = 0; i < s.valid_numel(); ++i) expect[i] = static_cast<float>(s.begin() + i + 1);
        EXPECT_EQ(reslice(views, s), expect) << old_world << " -> " << new_world << " rank " << r;
      }
    }
  }
}

}  // namespace
}  // namespace fabkit::trainer
