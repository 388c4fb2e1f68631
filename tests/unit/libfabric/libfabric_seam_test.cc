// The real seam against the installed libfabric (Debian's libfabric1 on the development VM, with
// its tcp and sockets providers): the version and the RDM providers it reports must be what
// libfabric's own fi_info prints. The trusted-directory search is tested on its own.
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>

#include <map>
#include <optional>
#include <set>
#include <string>

#include "fabkit/config.h"
#include "ofi/libfabric_api.h"

namespace fabkit::ofi {
namespace {

TEST(LibfabricSearch, NeverLooksInRelativeOrTemporaryDirectories) {
  EXPECT_TRUE(never_searched(""));
  EXPECT_TRUE(never_searched("."));
  EXPECT_TRUE(never_searched("lib"));
  EXPECT_TRUE(never_searched("/tmp"));
  EXPECT_TRUE(never_searched("/tmp/evil/lib"));
  EXPECT_TRUE(never_searched("/var/tmp/x"));
  EXPECT_TRUE(never_searched("/dev/shm"));
  EXPECT_FALSE(never_searched("/tmpfoo"));
  EXPECT_FALSE(never_searched("/opt/amazon/efa/lib"));
  Environment env(std::map<std::string, std::string>{
      {"LD_LIBRARY_PATH", ".::/tmp/x:/opt/amazon/efa/lib/:lib:/usr/lib"}});
  auto dirs = libfabric_search_dirs(env);
  ASSERT_FALSE(dirs.empty());
  EXPECT_EQ(dirs[0], "/opt/amazon/efa/lib");
  EXPECT_EQ(dirs[1], "/usr/lib");
  for (const auto& d : dirs) {
    EXPECT_EQ(d[0], '/') << d;
    EXPECT_EQ(d.rfind("/tmp", 0), std::string::npos) << d;
  }
  EXPECT_EQ(std::set<std::string>(dirs.begin(), dirs.end()).size(), dirs.size());
}

#if FABKIT_HAVE_LIBFABRIC
// One command's stdout, or nullopt when it could not run.
std::optional<std::string> run(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (::pclose(p) != 0) return std::nullopt;
  return out;
}

std::string value_after(const std::string& text, const std::string& key) {
  auto at = text.find(key);
  if (at == std::string::npos) return {};
  auto end = text.find('\n', at);
  return text.substr(at + key.size(), end - at - key.size());
}

TEST(LibfabricSeam, ReportsWhatFiInfoPrintsEvenWithAProviderFilterSet) {
  auto version = run("fi_info --version 2>/dev/null");
  if (!version) GTEST_SKIP() << "fi_info is not installed (Debian package libfabric-bin)";
  auto listing = run("env -u FI_PROVIDER fi_info -t FI_EP_RDM 2>/dev/null");
  ASSERT_TRUE(listing) << "fi_info -t FI_EP_RDM failed";

  // FI_PROVIDER=tcp in the environment would hide every other provider from libfabric; the probe
  // lists them all and puts the variable back.
  ::setenv("FI_PROVIDER", "tcp", 1);
  auto api = make_libfabric_api(Environment::from_process());
  OfiDiscovery d = api->discover();
  const char* after = ::getenv("FI_PROVIDER");
  ASSERT_NE(after, nullptr);
  EXPECT_STREQ(after, "tcp");
  ::unsetenv("FI_PROVIDER");

  ASSERT_TRUE(d.library.loaded) << d.library.error;
  EXPECT_EQ(d.library.version, value_after(*version, "libfabric: "));
  EXPECT_EQ(d.library.api_version, value_after(*version, "libfabric api: "));
  EXPECT_FALSE(d.getinfo_error) << *d.getinfo_error;

  std::multiset<std::string> theirs, ours;
  size_t at = 0;
  while ((at = listing->find("provider: ", at)) != std::string::npos) {
    auto end = listing->find('\n', at);
    theirs.insert(listing->substr(at + 10, end - at - 10));
    at = end;
  }
  for (const auto& p : d.providers) ours.insert(p.name);
  EXPECT_EQ(ours, theirs);
  EXPECT_GT(ours.count("tcp;ofi_rxm"), 0u);
  for (const auto& p : d.providers) {
    EXPECT_EQ(p.endpoint_type, "FI_EP_RDM") << p.name;
    if (p.name == "tcp;ofi_rxm") {
      EXPECT_TRUE(p.has_cap(kCapTagged) && p.has_cap(kCapMsg)) << p.name;
      EXPECT_EQ(p.version, value_after(*listing, "version: ")) << p.name;
    }
  }
}
#else
TEST(LibfabricSeam, BuildWithoutLibfabricSaysSo) {
  OfiDiscovery d = make_libfabric_api(Environment::from_process())->discover();
  EXPECT_FALSE(d.library.loaded);
  EXPECT_EQ(d.library.error.rfind("not built with libfabric", 0), 0u) << d.library.error;
  EXPECT_TRUE(d.providers.empty());
}
#endif

}  // namespace
}  // namespace fabkit::ofi
