// libfabric's discovery in a child (ofi/libfabric_child.h): a child that crashes, hangs, is
// missing or prints something else is a library error naming it, never the caller's crash or hang.
#include "ofi/libfabric_child.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>

namespace fabkit::ofi {
namespace {

std::string script(const std::string& name, const std::string& body) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

OfiDiscovery discover(const std::string& program, int timeout_ms = 5000) {
  return make_libfabric_child_api(program, timeout_ms)->discover();
}

TEST(LibfabricChild, OnlyFabcheckIsStartedForTheSubcommand) {
  EXPECT_TRUE(is_fabcheck_program("/usr/bin/fabcheck"));
  EXPECT_TRUE(is_fabcheck_program("/work/build/cli/fabcheck"));
  EXPECT_FALSE(is_fabcheck_program("/bin/sh"));
  EXPECT_FALSE(is_fabcheck_program("/proc/self/exe"));  // this test binary
}

TEST(LibfabricChild, CrashingChildIsNamedWithItsSignal) {
  auto d = discover(script("crash.sh", "echo 'provider init' >&2; kill -SEGV $$"));
  EXPECT_FALSE(d.library.loaded);
  EXPECT_NE(d.library.error.find("killed by SIGSEGV"), std::string::npos) << d.library.error;
  EXPECT_NE(d.library.error.find("its stderr: provider init"), std::string::npos)
      << d.library.error;
}

TEST(LibfabricChild, HangingChildIsKilledAtTheDeadline) {
  auto t0 = std::chrono::steady_clock::now();
  auto d = discover(script("hang.sh", "exec sleep 30"), 500);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(d.library.error.find("did not answer within 500 ms and was killed"), std::string::npos)
      << d.library.error;
  EXPECT_LT(s, 5.0);
}

TEST(LibfabricChild, OtherOutputOrAMissingProgramIsNamed) {
  auto junk = discover(script("junk.sh", "echo hello"));
  EXPECT_NE(junk.library.error.find("answered something else than its JSON"), std::string::npos)
      << junk.library.error;
  auto missing = discover(::testing::TempDir() + "/no-such-fabcheck");
  EXPECT_NE(missing.library.error.find("could not start the libfabric discovery child"),
            std::string::npos)
      << missing.library.error;
}

TEST(LibfabricChild, ItsJsonAnswerIsTheDiscovery) {
  auto d = discover(script(
      "ok.sh",
      R"(echo '{"library": {"loaded": true, "path": "/opt/amazon/efa/lib/libfabric.so.1", )"
      R"("version": "1.22.0amzn4.0", "api_version": "1.22", "error": null}, "getinfo_error": null, )"
      R"("providers": []}')"));
  ASSERT_TRUE(d.library.loaded) << d.library.error;
  EXPECT_EQ(d.library.version, "1.22.0amzn4.0");
}

}  // namespace
}  // namespace fabkit::ofi
