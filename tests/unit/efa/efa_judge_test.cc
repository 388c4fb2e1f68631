// The EFA judge on facts built in the test: the FI_* settings against the instance (fi_efa(7)),
// the device count against the table, huge pages.
#include <gtest/gtest.h>

#include <optional>

#include "probes/efa/efa_facts.h"

namespace fabkit::probes {
namespace {

// A copy: the judges' vectors here are temporaries.
std::optional<Finding> find(const std::vector<Finding>& fs, const std::string& code) {
  for (const auto& f : fs)
    if (f.code == code) return f;
  return std::nullopt;
}

EfaFacts on(const std::string& type, int devices) {
  EfaFacts f;
  f.sys_vendor = "Amazon EC2";
  f.product_name = type;
  f.on_aws = true;
  f.instance = find_efa_instance(type);
  for (int i = 0; i < devices; ++i) {
    EfaDevice d;
    d.name = "rdmap" + std::to_string(16 * (i + 1)) + "s27";
    d.state = verbs::PortState::kActive;
    f.devices.push_back(d);
  }
  return f;
}

TEST(EfaTable, RowsFollowTheirSources) {
  const auto* p4d = find_efa_instance("p4d.24xlarge");
  ASSERT_TRUE(p4d);
  EXPECT_EQ(p4d->efa_devices, 4);
  EXPECT_TRUE(p4d->device_rdma);
  EXPECT_EQ(find_efa_instance("p5.48xlarge")->efa_devices, 32);
  EXPECT_EQ(find_efa_instance("p5en.48xlarge")->efa_devices, 16);
  EXPECT_EQ(find_efa_instance("p6-b200.48xlarge")->efa_devices, 8);
  EXPECT_FALSE(find_efa_instance("g5.48xlarge")->device_rdma);
  EXPECT_EQ(find_efa_instance("p4d"), nullptr);
  for (const auto& row : efa_instance_table()) EXPECT_NE(std::string(row.source), "") << row.name;
}

TEST(EfaJudge, NoDevicesOnAnEfaInstanceFails) {
  const auto found = judge_efa(on("p4d.24xlarge", 0));
  const auto f = find(found, "efa.no_devices");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kFail);
  EXPECT_NE(f->fix.find("modprobe efa"), std::string::npos);
}

TEST(EfaJudge, UnknownAwsTypeWithoutEfaIsInfo) {
  const auto found = judge_efa(on("m7i.large", 0));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].code, "efa.instance_not_in_table");
  EXPECT_EQ(found[0].severity, Severity::kInfo);
}

TEST(EfaJudge, NotAwsAndNoEfaSaysNothing) { EXPECT_TRUE(judge_efa(EfaFacts{}).empty()); }

TEST(EfaJudge, ProviderOtherThanEfaWarns) {
  auto f = on("p4d.24xlarge", 4);
  f.settings["FI_PROVIDER"] = "tcp";
  const auto w = find(judge_efa(f), "efa.provider_not_efa");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->severity, Severity::kWarn);
  f.settings["FI_PROVIDER"] = "^efa";
  EXPECT_TRUE(find(judge_efa(f), "efa.provider_not_efa"));
  f.settings["FI_PROVIDER"] = "efa,shm";
  EXPECT_FALSE(find(judge_efa(f), "efa.provider_not_efa"));
  f.settings["FI_PROVIDER"] = "^tcp";
  EXPECT_FALSE(find(judge_efa(f), "efa.provider_not_efa"));
}

TEST(EfaJudge, ProviderEfaWithoutDeviceFails) {
  EfaFacts f;  // not AWS, no device
  f.settings["FI_PROVIDER"] = "efa";
  const auto x = find(judge_efa(f), "efa.provider_without_device");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->severity, Severity::kFail);
  f.settings["FI_PROVIDER"] = "^efa";
  EXPECT_FALSE(find(judge_efa(f), "efa.provider_without_device"));
}

TEST(EfaJudge, DeviceRdmaFollowsTheInstance) {
  auto g5 = on("g5.12xlarge", 1);
  g5.settings["FI_EFA_USE_DEVICE_RDMA"] = "yes";
  EXPECT_TRUE(find(judge_efa(g5), "efa.device_rdma_unsupported"));
  g5.settings["FI_EFA_USE_DEVICE_RDMA"] = "0";
  EXPECT_TRUE(judge_efa(g5).empty());
  auto p4d = on("p4d.24xlarge", 4);
  p4d.settings["FI_EFA_USE_DEVICE_RDMA"] = "1";
  EXPECT_TRUE(judge_efa(p4d).empty());
  p4d.settings["FI_EFA_USE_DEVICE_RDMA"] = "off";
  const auto w = find(judge_efa(p4d), "efa.device_rdma_off");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->severity, Severity::kWarn);
}

TEST(EfaJudge, ForkSupportWithHugePagesAborts) {
  auto f = on("p5.48xlarge", 32);
  f.settings["FI_EFA_FORK_SAFE"] = "1";
  const auto i = find(judge_efa(f), "efa.fork_safe_set");
  ASSERT_TRUE(i);
  EXPECT_EQ(i->severity, Severity::kInfo);
  f.settings["FI_EFA_USE_HUGE_PAGE"] = "1";
  const auto found = judge_efa(f);
  ASSERT_TRUE(find(found, "efa.fork_safe_with_huge_pages"));
  EXPECT_EQ(find(found, "efa.fork_safe_with_huge_pages")->severity, Severity::kFail);
  EXPECT_FALSE(find(found, "efa.fork_safe_set"));
  // libibverbs' own variable turns libfabric's fork support on too, whatever its value.
  f.settings.erase("FI_EFA_FORK_SAFE");
  f.settings["RDMAV_FORK_SAFE"] = "1";
  const auto rdmav = find(judge_efa(f), "efa.fork_safe_with_huge_pages");
  ASSERT_TRUE(rdmav);
  EXPECT_EQ(rdmav->subject, "RDMAV_FORK_SAFE");
}

TEST(EfaJudge, ForkWithoutSupportOnAnOldKernelAborts) {
  auto f = on("p4d.24xlarge", 4);
  f.kernel_release = "5.10.228-219.884.amzn2.x86_64";
  const auto w = find(judge_efa(f), "efa.fork_unsafe_kernel");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->severity, Severity::kWarn);
  EXPECT_NE(w->message.find("5.10.228"), std::string::npos);
  f.settings["FI_EFA_FORK_SAFE"] = "1";
  EXPECT_FALSE(find(judge_efa(f), "efa.fork_unsafe_kernel"));
  f.settings.clear();
  f.kernel_release = "6.14.0-1018-aws";
  EXPECT_FALSE(find(judge_efa(f), "efa.fork_unsafe_kernel"));
  f.kernel_release = "garbage";
  EXPECT_FALSE(find(judge_efa(f), "efa.fork_unsafe_kernel"));  // unknown: not judged
  f.kernel_release = "5.13.0-1031-aws";
  EXPECT_EQ(kernel_copies_dma_pages_on_fork(f), true);
}

TEST(EfaJudge, HugePagesAgainstFiEfaUseHugePage) {
  auto f = on("p4d.24xlarge", 4);
  parse_meminfo_hugepages(
      "MemTotal:       1176587520 kB\nHugePages_Total:       0\nHugePages_Free:        0\n"
      "Hugepagesize:       2048 kB\n",
      f);
  EXPECT_EQ(f.hugepages_total, 0);
  EXPECT_EQ(f.hugepage_size_kb, 2048);
  EXPECT_TRUE(find(judge_efa(f), "efa.hugepages_none"));
  f.settings["FI_EFA_USE_HUGE_PAGE"] = "0";
  EXPECT_FALSE(find(judge_efa(f), "efa.hugepages_none"));
  f.settings.clear();
  parse_meminfo_hugepages("HugePages_Total:    5128\nHugePages_Free:        0\n", f);
  const auto w = find(judge_efa(f), "efa.hugepages_exhausted");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->severity, Severity::kWarn);
  parse_meminfo_hugepages("HugePages_Free:      17\n", f);
  EXPECT_TRUE(judge_efa(f).empty());
}

TEST(EfaJudge, MalformedMeminfoStaysUnknown) {
  EfaFacts f;
  parse_meminfo_hugepages("HugePages_Total: lots\nHugePages_Free\n", f);
  EXPECT_FALSE(f.hugepages_total);
  EXPECT_FALSE(f.hugepages_free);
}

TEST(EfaJudge, FiBooleansAsLibfabricReadsThem) {
  EXPECT_EQ(parse_fi_bool("ON"), true);
  EXPECT_EQ(parse_fi_bool("no"), false);
  EXPECT_FALSE(parse_fi_bool("2"));
}

TEST(EfaJudge, MoreDevicesThanTheTableIsInfo) {
  const auto f = find(judge_efa(on("p4d.24xlarge", 5)), "efa.devices_over_table");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kInfo);
}

}  // namespace
}  // namespace fabkit::probes
