// The libfabric.* rules on real captures (tests/fixtures/libfabric/README.md says where each came
// from), read through the replay seam as `fabcheck node --ofi-replay` reads them.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "common/errors.h"
#include "ofi/replay_ofi_api.h"
#include "probes/libfabric/libfabric_facts.h"

namespace fabkit::probes {
namespace {

const std::string kFixtures = std::string(FABKIT_SOURCE_DIR) + "/tests/fixtures/libfabric/";

LibfabricFacts replay(const std::string& name) {
  auto api = ofi::make_replay_ofi_api(kFixtures + name);
  return gather_libfabric(*api);
}

const Finding* find(const std::vector<Finding>& fs, const std::string& code) {
  for (const auto& f : fs)
    if (f.code == code) return &f;
  return nullptr;
}

std::string codes(const std::vector<Finding>& fs) {
  std::string out;
  for (const auto& f : fs) out += f.code + " ";
  return out;
}

TEST(LibfabricJudge, P4dCaptureWithLibfabric111IsTooOldForThePluginOnEfa) {
  auto f = replay("p4d-efa-1.11.2.json");
  ASSERT_EQ(f.discovery.providers.size(), 4u);
  EXPECT_EQ(f.discovery.providers[0].domain, "rdmap16s27-rdm");
  auto fs = judge_libfabric(f, {4, std::string("efa"), std::string("1")});
  const Finding* old = find(fs, "libfabric.too_old_for_plugin");
  ASSERT_NE(old, nullptr) << codes(fs);
  EXPECT_EQ(old->severity, Severity::kFail);
  EXPECT_NE(old->message.find("1.22"), std::string::npos) << old->message;
  EXPECT_NE(old->fix.find("efa_installer.sh"), std::string::npos) << old->fix;
  // The efa provider is there, offers FI_HMEM, and FI_PROVIDER=efa selects it.
  EXPECT_EQ(find(fs, "libfabric.no_efa_provider"), nullptr) << codes(fs);
  EXPECT_EQ(find(fs, "libfabric.efa_no_hmem"), nullptr) << codes(fs);
  EXPECT_EQ(find(fs, "libfabric.provider_not_offered"), nullptr) << codes(fs);
}

TEST(LibfabricJudge, EfaProviderWithoutHmemWhileDeviceRdmaIsAskedFor) {
  auto f = replay("p4d-efa-1.11.2.json");
  for (auto& p : f.discovery.providers)
    p.caps.erase(std::remove(p.caps.begin(), p.caps.end(), "FI_HMEM"), p.caps.end());
  auto fs = judge_libfabric(f, {4, std::nullopt, std::string("1")});
  const Finding* hmem = find(fs, "libfabric.efa_no_hmem");
  ASSERT_NE(hmem, nullptr) << codes(fs);
  EXPECT_EQ(hmem->severity, Severity::kWarn);
  EXPECT_NE(hmem->message.find("FI_EFA_USE_DEVICE_RDMA=1"), std::string::npos);
  // Not asked for (unset, or 0): nothing to say.
  EXPECT_EQ(find(judge_libfabric(f, {4, std::nullopt, std::nullopt}), "libfabric.efa_no_hmem"),
            nullptr);
  EXPECT_EQ(find(judge_libfabric(f, {4, std::nullopt, std::string("0")}), "libfabric.efa_no_hmem"),
            nullptr);
}

TEST(LibfabricJudge, EfaDevicesButTheLibraryOffersNoEfaProvider) {
  auto f = replay("debian-1.17-tcp-recorded.json");
  auto fs = judge_libfabric(f, {4, std::nullopt, std::nullopt});
  const Finding* none = find(fs, "libfabric.no_efa_provider");
  ASSERT_NE(none, nullptr) << codes(fs);
  EXPECT_EQ(none->severity, Severity::kFail);
  EXPECT_NE(none->message.find("tcp;ofi_rxm"), std::string::npos) << none->message;
  EXPECT_NE(none->fix.find("/opt/amazon/efa"), std::string::npos) << none->fix;
  // Without EFA devices the same library is fine.
  EXPECT_TRUE(judge_libfabric(f, {0, std::nullopt, std::nullopt}).empty());
}

TEST(LibfabricJudge, ProviderFilterThatSelectsNothingNamesTheOfferedOnes) {
  auto f = replay("debian-1.17-tcp-recorded.json");
  auto fs = judge_libfabric(f, {0, std::string("efa"), std::nullopt});
  const Finding* p = find(fs, "libfabric.provider_not_offered");
  ASSERT_NE(p, nullptr) << codes(fs);
  EXPECT_EQ(p->severity, Severity::kFail);
  EXPECT_NE(p->fix.find("tcp, net, udp, shm, sockets"), std::string::npos) << p->fix;
  EXPECT_EQ(find(judge_libfabric(f, {0, std::string("tcp"), std::nullopt}),
                 "libfabric.provider_not_offered"),
            nullptr);
  EXPECT_EQ(find(judge_libfabric(f, {0, std::string("^tcp"), std::nullopt}),
                 "libfabric.provider_not_offered"),
            nullptr);
}

TEST(LibfabricJudge, ProviderFilterMatchesCoreNamesAndExclusions) {
  std::vector<std::string> offered = {"tcp;ofi_rxm", "shm", "efa"};
  EXPECT_EQ(providers_selected("tcp", offered), std::vector<std::string>{"tcp;ofi_rxm"});
  EXPECT_EQ(providers_selected("efa,shm", offered), (std::vector<std::string>{"shm", "efa"}));
  EXPECT_EQ(providers_selected("^efa", offered), (std::vector<std::string>{"tcp;ofi_rxm", "shm"}));
  EXPECT_TRUE(providers_selected("verbs", offered).empty());
}

TEST(LibfabricJudge, UnloadableLibraryOnAnEfaNodeFailsAndElsewhereSaysNothing) {
  LibfabricFacts f;
  f.gathered = true;
  f.discovery.library.error = "dlopen /usr/lib/x86_64-linux-gnu/libfabric.so.1: undefined symbol";
  auto fs = judge_libfabric(f, {4, std::nullopt, std::nullopt});
  ASSERT_EQ(fs.size(), 1u) << codes(fs);
  EXPECT_EQ(fs[0].code, "libfabric.not_loadable");
  EXPECT_EQ(fs[0].severity, Severity::kFail);
  EXPECT_NE(fs[0].message.find("undefined symbol"), std::string::npos);
  EXPECT_TRUE(judge_libfabric(f, {0, std::nullopt, std::nullopt}).empty());
  auto asked = judge_libfabric(f, {0, std::string("efa"), std::nullopt});
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].severity, Severity::kWarn);
}

TEST(LibfabricJudge, BuildWithoutLibfabricSaysSoOnAnEfaNode) {
  LibfabricFacts f;
  f.gathered = true;
  f.discovery.library.error = "not built with libfabric (...)";
  auto fs = judge_libfabric(f, {2, std::nullopt, std::nullopt});
  ASSERT_EQ(fs.size(), 1u) << codes(fs);
  EXPECT_EQ(fs[0].code, "libfabric.not_built");
}

TEST(LibfabricJudge, GetinfoErrorIsANamedFinding) {
  LibfabricFacts f;
  f.gathered = true;
  f.discovery.library = {true, "/usr/lib/libfabric.so.1", "1.22.0", "1.22", ""};
  f.discovery.getinfo_error = "fi_getinfo: Function not implemented (-38)";
  auto fs = judge_libfabric(f, {4, std::nullopt, std::nullopt});
  ASSERT_EQ(fs.size(), 1u) << codes(fs);
  EXPECT_EQ(fs[0].code, "libfabric.getinfo_failed");
  EXPECT_EQ(fs[0].severity, Severity::kFail);
}

TEST(LibfabricJudge, NotGatheredUnderSysrootJudgesNothing) {
  LibfabricFacts f;
  f.not_gathered_reason = "--sysroot";
  EXPECT_TRUE(judge_libfabric(f, {4, std::string("efa"), std::string("1")}).empty());
  EXPECT_EQ(to_json(f)["version"], Json());
}

TEST(LibfabricReplay, SectionCarriesTheLibraryVersionAtTheTop) {
  auto j = to_json(replay("p4d-efa-1.11.2.json"));
  EXPECT_EQ(j["version"], "1.11.2");
  EXPECT_EQ(j["providers"].size(), 4u);
  EXPECT_EQ(j["providers"][3]["domain"], "rdmap160s27-rdm");
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(LibfabricReplay, TruncatedOrMistypedFileIsAUsageErrorNamingFileAndField) {
  std::string dir = ::testing::TempDir();
  write(dir + "/trunc.json", "{\"library\": {\"loaded\": true, \"vers");
  try {
    ofi::make_replay_ofi_api(dir + "/trunc.json");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("trunc.json"), std::string::npos) << e.what();
  }
  write(dir + "/nocaps.json",
        R"({"library": {"loaded": true, "version": "1.22.0"}, "providers": [
             {"provider": "efa", "fabric": "efa", "domain": "rdmap0s6-rdm", "version": "122.0",
              "endpoint_type": "FI_EP_RDM", "mr_mode": []}]})");
  try {
    ofi::make_replay_ofi_api(dir + "/nocaps.json");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("providers[0].caps"), std::string::npos) << e.what();
  }
  write(dir + "/badversion.json",
        R"({"library": {"loaded": true, "version": "latest"}, "providers": []})");
  EXPECT_THROW(ofi::make_replay_ofi_api(dir + "/badversion.json"), UsageError);
}

}  // namespace
}  // namespace fabkit::probes
