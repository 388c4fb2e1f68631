// gather_net under --sysroot: a real sysfs capture (prometheus/procfs eth0) plus hand-made
// entries for the kinds a GPU node shows (lo, docker0 bridge, a veth, IPoIB, a down NIC).
#include <gtest/gtest.h>

#include <filesystem>

#include "probes/net/net_facts.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

namespace fs = std::filesystem;
using fabkit::testing::write_file;

void add_if(const fs::path& net, const std::string& name, int ifindex, int iflink, int type,
            const std::string& flags, const std::string& oper, const std::string& speed,
            bool device) {
  fs::path d = net / name;
  write_file(d / "ifindex", std::to_string(ifindex) + "\n");
  write_file(d / "iflink", std::to_string(iflink) + "\n");
  write_file(d / "type", std::to_string(type) + "\n");
  write_file(d / "flags", flags + "\n");
  write_file(d / "operstate", oper + "\n");
  write_file(d / "mtu", type == 32 ? "2044\n" : "1500\n");
  if (!speed.empty()) write_file(d / "speed", speed + "\n");
  if (device) fs::create_directory_symlink("../../../devices/pci0000:00/0000:3b:00.0", d / "device");
}

class NetGather : public ::testing::Test {
 protected:
  void SetUp() override {
    fabkit::testing::unpack_ttar(
        fabkit::testing::project_fixtures() / "real/sysfs/procfs_sys_class_net_eth0_roce_ecn.ttar",
        dir_.path(), "fixtures/");
    fs::path net = dir_.path() / "sys/class/net";
    add_if(net, "lo", 1, 1, 772, "0x9", "unknown", "", false);
    add_if(net, "docker0", 3, 3, 1, "0x1003", "down", "", false);
    fs::create_directories(net / "docker0/bridge");
    add_if(net, "veth9a1b", 4, 9, 1, "0x1003", "up", "10000", false);
    add_if(net, "ib0", 5, 5, 32, "0x1003", "up", "100000", true);
    add_if(net, "eno2", 6, 6, 1, "0x1002", "down", "-1", true);
    ctx_.roots = SystemRoots::under(dir_.path());
  }
  const NetInterface& find(const NetFacts& f, const std::string& name) {
    for (const auto& i : f.interfaces)
      if (i.name == name) return i;
    throw std::runtime_error("no interface " + name);
  }
  fabkit::testing::TempDir dir_{"net-gather"};
  ProbeContext ctx_;
};

TEST_F(NetGather, ReadsTheRealCaptureAndClassifies) {
  NetFacts f = gather_net(ctx_, NetSettings{});
  EXPECT_EQ(f.source, "sysfs");
  EXPECT_FALSE(f.addresses_known);
  ASSERT_EQ(f.interfaces.size(), 6u);
  const auto& eth0 = find(f, "eth0");
  EXPECT_EQ(eth0.kind, "physical");
  EXPECT_FALSE(eth0.is_virtual);
  EXPECT_EQ(eth0.speed_mbps.value_or(0), 1000);
  EXPECT_EQ(eth0.mtu.value_or(0), 1500);
  EXPECT_EQ(eth0.pci_device.value_or(""), "0000:00:1f.6");
  EXPECT_TRUE(eth0.up);       // flags 0x1303 has IFF_UP
  EXPECT_TRUE(eth0.running);  // operstate up
  EXPECT_EQ(find(f, "lo").kind, "loopback");
  EXPECT_TRUE(find(f, "lo").running);  // operstate "unknown" counts as oper-up
  EXPECT_FALSE(find(f, "lo").speed_mbps);
  EXPECT_EQ(find(f, "docker0").kind, "docker");
  EXPECT_FALSE(find(f, "docker0").running);
  EXPECT_EQ(find(f, "veth9a1b").kind, "veth");
  EXPECT_TRUE(find(f, "veth9a1b").is_virtual);
  EXPECT_EQ(find(f, "ib0").kind, "ipoib");
  EXPECT_FALSE(find(f, "ib0").is_virtual);
  EXPECT_FALSE(find(f, "eno2").up);
  EXPECT_FALSE(find(f, "eno2").speed_mbps);  // -1 on a down link means unknown
}

TEST_F(NetGather, NcclWouldTakeIpoibFirst) {
  NetFacts f = gather_net(ctx_, NetSettings{});
  EXPECT_EQ(f.nccl_pick.name.value_or(""), "ib0");
  EXPECT_EQ(f.recommended.name.value_or(""), "ib0");  // 100 Gb/s beats eth0's 1 Gb/s
  bool unknown_said = false;
  for (const auto& x : judge_net(f)) unknown_said = unknown_said || x.code == "net.addresses_unknown";
  EXPECT_TRUE(unknown_said);
}

TEST_F(NetGather, IfnameMatchingOnlyADownNicFails) {
  NetSettings s;
  s.socket_ifname = "=eno2";
  s.socket_ifname_source = "environment";
  NetFacts f = gather_net(ctx_, s);
  EXPECT_EQ(f.socket_ifname_matched, (std::vector<std::string>{"eno2"}));
  EXPECT_FALSE(f.nccl_pick.name);
  bool seen = false;
  for (const auto& x : judge_net(f))
    seen = seen || (x.code == "net.ifname_unusable" && x.severity == Severity::kFail);
  EXPECT_TRUE(seen);
}

TEST_F(NetGather, JsonHasTheContractFields) {
  Json j = to_json(gather_net(ctx_, NetSettings{}));
  ASSERT_TRUE(j["interfaces"].is_array());
  const Json& i = j["interfaces"][0];
  for (const char* k : {"name", "operstate", "running", "up", "mtu", "speed_mbps", "virtual",
                        "kind", "addresses"})
    EXPECT_TRUE(i.contains(k)) << k;
  EXPECT_TRUE(i["addresses"].is_null());  // unknown under --sysroot, not "none"
  EXPECT_TRUE(j["nccl_socket_ifname"].contains("matched"));
  EXPECT_TRUE(j["nccl_pick"].contains("name"));
  EXPECT_TRUE(j["recommended"].contains("reason"));
}

}  // namespace
}  // namespace fabkit::probes

namespace fabkit::probes {
namespace {

// The real procfs capture of /sys/class/infiniband alone (HCAs, no sys/class/net): the interfaces
// are unknown, which is an info, not the FAIL net.no_usable_interface it used to be.
TEST(NetGatherCapture, InfinibandCaptureWithoutClassNetIsUnknownNotAFailure) {
  fabkit::testing::TempDir dir{"net-no-class-net"};
  fabkit::testing::unpack_ttar(fabkit::testing::project_fixtures() / "real/sysfs/procfs_sys_class_infiniband.ttar",
                               dir.path(), "fixtures/");
  ASSERT_TRUE(std::filesystem::is_directory(dir.path() / "sys/class/infiniband"));
  ASSERT_FALSE(std::filesystem::exists(dir.path() / "sys/class/net"));
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  NetFacts f = gather_net(ctx, NetSettings{});
  EXPECT_FALSE(f.interfaces_known);
  EXPECT_TRUE(f.interfaces.empty());
  auto out = judge_net(f);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].code, "net.interfaces_unknown");
  EXPECT_EQ(out[0].severity, Severity::kInfo);
}

}  // namespace
}  // namespace fabkit::probes
