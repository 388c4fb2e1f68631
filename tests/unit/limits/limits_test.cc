#include <gtest/gtest.h>

#include <fstream>

#include "probes/limits/limits_facts.h"

namespace fabkit::probes {
namespace {

// Verbatim layout of /proc/self/limits (Linux 6.1).
const char* kProcLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max stack size            8388608              unlimited            bytes     \n"
    "Max open files            1024                 1048576              files     \n"
    "Max locked memory         65536                65536                bytes     \n";

bool has_code(const std::vector<Finding>& fs, const std::string& code, Severity sev) {
  for (const auto& f : fs)
    if (f.code == code && f.severity == sev) return true;
  return false;
}

}  // namespace

TEST(Limits, ParsesProcLimitsRows) {
  auto m = parse_proc_limits_line(kProcLimits, "Max locked memory");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->soft, 65536u);
  EXPECT_FALSE(m->hard_unlimited);
  auto s = parse_proc_limits_line(kProcLimits, "Max stack size");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->hard_unlimited);
  EXPECT_FALSE(parse_proc_limits_line(kProcLimits, "Max nonsense"));
  EXPECT_FALSE(
      parse_proc_limits_line("Max locked memory  lots  more  bytes\n", "Max locked memory"));
}

TEST(Limits, ParsesShmSizeFromMounts) {
  EXPECT_EQ(parse_shm_size_from_mounts(
                "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n"),
            64ull << 20);
  EXPECT_EQ(parse_shm_size_from_mounts("tmpfs /dev/shm tmpfs rw,size=8G 0 0\n"), 8ull << 30);
  EXPECT_FALSE(parse_shm_size_from_mounts("proc /proc proc rw 0 0\n"));
}

TEST(Limits, LowMemlockFailsOnlyWhereRdmaExists) {
  LimitsFacts f;
  f.memlock_bytes = RlimitPair{false, 65536, false, 65536};
  f.shm_size_bytes = 8ull << 30;
  EXPECT_TRUE(has_code(judge_limits(f, true), "limits.memlock_low", Severity::kFail));
  EXPECT_TRUE(has_code(judge_limits(f, false), "limits.memlock_low", Severity::kInfo));
  f.memlock_bytes = RlimitPair{true, 0, true, 0};
  EXPECT_FALSE(has_code(judge_limits(f, true), "limits.memlock_low", Severity::kFail));
}

TEST(Limits, SmallShmInContainerSuggestsShmSize) {
  LimitsFacts f;
  f.shm_size_bytes = 64ull << 20;
  f.container.detected = true;
  f.container.kind = "docker";
  auto fs = judge_limits(f, false);
  bool found = false;
  for (const auto& x : fs)
    if (x.code == "limits.shm_small") {
      found = true;
      EXPECT_NE(x.fix.find("--shm-size"), std::string::npos);
      EXPECT_NE(x.message.find("64 MiB"), std::string::npos);
    }
  EXPECT_TRUE(found);
}

TEST(Limits, SysrootGatherReadsProcFiles) {
  auto dir = std::filesystem::temp_directory_path() / ("fabkit_limits_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "proc/self");
  std::ofstream(dir / "proc/self/limits") << kProcLimits;
  std::ofstream(dir / "proc/mounts") << "shm /dev/shm tmpfs rw,size=65536k 0 0\n";
  std::filesystem::create_directories(dir / "run");
  std::ofstream(dir / ".dockerenv") << "";
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir);
  auto f = gather_limits(ctx);
  ASSERT_TRUE(f.memlock_bytes);
  EXPECT_EQ(f.memlock_bytes->soft, 65536u);
  ASSERT_TRUE(f.nofile);
  EXPECT_EQ(f.nofile->soft, 1024u);
  EXPECT_EQ(f.shm_size_bytes, 64ull << 20);
  EXPECT_TRUE(f.container.detected);
  EXPECT_EQ(f.container.kind, "docker");
  auto fs = judge_limits(f, true);
  EXPECT_TRUE(has_code(fs, "limits.nofile_low", Severity::kWarn));
  std::filesystem::remove_all(dir);
}

}  // namespace fabkit::probes
