// NCCL's interface order and our recommendation, on constructed interface lists.
#include <gtest/gtest.h>

#include "probes/net/net_facts.h"

namespace fabkit::probes {
namespace {

NetInterface make(const std::string& name, const std::string& kind, const std::string& addr,
                  int prefix, int order, bool running = true) {
  NetInterface i;
  i.name = name;
  i.kind = kind;
  i.is_virtual = !(kind == "physical" || kind == "ipoib");
  i.up = true;
  i.running = running;
  i.operstate = running ? "up" : "down";
  if (!addr.empty()) i.addresses.push_back({"ipv4", addr, prefix});
  i.enum_order = order;
  i.mtu = 1500;
  return i;
}

std::vector<NetInterface> typical() {
  return {make("lo", "loopback", "127.0.0.1", 8, 1), make("docker0", "docker", "172.17.0.1", 16, 2),
          make("eno1", "physical", "10.1.0.5", 24, 3), make("ens2", "physical", "10.2.0.5", 24, 4)};
}

TEST(NcclPick, UnsetTakesFirstNonDockerNonLo) {
  auto p = nccl_pick(typical(), NetSettings{}, true);
  ASSERT_TRUE(p.name);
  EXPECT_EQ(*p.name, "eno1");
  EXPECT_EQ(p.step, "^docker,lo,virbr");
  EXPECT_EQ(p.all, (std::vector<std::string>{"eno1", "ens2"}));
}

TEST(NcclPick, IbInterfacesComeFirst) {
  auto ifs = typical();
  ifs.push_back(make("ib0", "ipoib", "192.168.10.5", 24, 5));
  auto p = nccl_pick(ifs, NetSettings{}, true);
  EXPECT_EQ(p.name.value_or(""), "ib0");
  EXPECT_EQ(p.step, "ib");
}

TEST(NcclPick, NotRunningInterfacesDoNotCount) {
  auto ifs = typical();
  ifs.push_back(make("ib0", "ipoib", "192.168.10.5", 24, 5, /*running=*/false));
  EXPECT_EQ(nccl_pick(ifs, NetSettings{}, true).name.value_or(""), "eno1");
}

TEST(NcclPick, CommIdSubnetBeatsScanOrder) {
  NetSettings s;
  s.comm_id = "10.2.0.9:29500";
  auto p = nccl_pick(typical(), s, true);
  EXPECT_EQ(p.name.value_or(""), "ens2");
  EXPECT_EQ(p.step, "NCCL_COMM_ID subnet");
}

TEST(NcclPick, OnlyDockerAndLoLeft) {
  std::vector<NetInterface> ifs = {make("lo", "loopback", "127.0.0.1", 8, 1),
                                   make("docker0", "docker", "172.17.0.1", 16, 2)};
  EXPECT_EQ(nccl_pick(ifs, NetSettings{}, true).name.value_or(""), "docker0");
  ifs.pop_back();
  EXPECT_EQ(nccl_pick(ifs, NetSettings{}, true).name.value_or(""), "lo");
}

TEST(NcclPick, UserListWinsAndCanMatchNothing) {
  NetSettings s;
  s.socket_ifname = "=ens2";
  s.socket_ifname_source = "environment";
  EXPECT_EQ(nccl_pick(typical(), s, true).name.value_or(""), "ens2");
  s.socket_ifname = "eth";
  auto p = nccl_pick(typical(), s, true);
  EXPECT_FALSE(p.name);
  EXPECT_NE(p.reason.find("no socket interface found"), std::string::npos);
}

TEST(NcclPick, OneCharacterValueIsIgnored) {
  NetSettings s;
  s.socket_ifname = "e";
  auto p = nccl_pick(typical(), s, true);
  EXPECT_EQ(p.name.value_or(""), "eno1");
  EXPECT_NE(p.reason.find("one character"), std::string::npos);
}

TEST(NcclPick, SocketFamilyFilters) {
  auto ifs = typical();
  ifs[2].addresses = {{"ipv6", "fd00::5", 64}};
  NetSettings s;
  s.socket_family = "AF_INET";
  EXPECT_EQ(nccl_pick(ifs, s, true).name.value_or(""), "ens2");
}

TEST(Recommend, PeerSubnetWins) {
  PeerFacts peer;
  peer.given = "10.2.0.9";
  peer.via = "--peer";
  peer.addresses = {"10.2.0.9"};
  peer.on_subnet_of = {"ens2"};
  auto r = recommend_interface(typical(), peer, true);
  EXPECT_EQ(r.name.value_or(""), "ens2");
}

TEST(Recommend, NeverLoopbackAndPrefersPhysicalOverDocker) {
  std::vector<NetInterface> ifs = {make("lo", "loopback", "127.0.0.1", 8, 1),
                                   make("docker0", "docker", "172.17.0.1", 16, 2),
                                   make("veth1", "veth", "10.5.0.2", 24, 3)};
  EXPECT_EQ(recommend_interface(ifs, std::nullopt, true).name.value_or(""), "veth1");
  ifs.pop_back();
  EXPECT_EQ(recommend_interface(ifs, std::nullopt, true).name.value_or(""), "docker0");
  ifs.pop_back();
  EXPECT_FALSE(recommend_interface(ifs, std::nullopt, true).name);
}

TEST(Recommend, FasterPhysicalFirst) {
  auto ifs = typical();
  ifs[2].speed_mbps = 1000;
  ifs[3].speed_mbps = 100000;
  EXPECT_EQ(recommend_interface(ifs, std::nullopt, true).name.value_or(""), "ens2");
}

TEST(Subnet, Ipv4AndIpv6Masks) {
  EXPECT_TRUE(address_in_subnet({"ipv4", "198.18.1.1", 24}, "198.18.1.200"));
  EXPECT_FALSE(address_in_subnet({"ipv4", "198.18.1.1", 24}, "198.18.2.1"));
  EXPECT_TRUE(address_in_subnet({"ipv4", "198.18.1.1", 15}, "198.19.255.1"));
  EXPECT_TRUE(address_in_subnet({"ipv6", "fd00:1::1", 64}, "fd00:1::ffff"));
  EXPECT_FALSE(address_in_subnet({"ipv6", "fd00:1::1", 64}, "fd00:2::1"));
  EXPECT_FALSE(address_in_subnet({"ipv4", "198.18.1.1", 24}, "not-an-address"));
}

TEST(JudgeNet, DiffersWarnsWithExactPinFix) {
  NetFacts f;
  f.interfaces = typical();
  f.settings.socket_ifname = "eno";
  f.settings.socket_ifname_source = "/etc/nccl.conf";
  f.socket_ifname_list = parse_nccl_list("eno", kNcclMaxSocketEntries);
  f.socket_ifname_matched = {"eno1"};
  f.nccl_pick = nccl_pick(f.interfaces, f.settings, true);
  PeerFacts peer{"10.2.0.9", "--peer", {"10.2.0.9"}, std::nullopt, {"ens2"}, std::nullopt};
  f.peer = peer;
  f.recommended = recommend_interface(f.interfaces, f.peer, true);
  auto findings = judge_net(f);
  bool seen = false;
  for (const auto& x : findings)
    if (x.code == "net.nccl_pick_differs") {
      seen = true;
      EXPECT_EQ(x.severity, Severity::kWarn);
      EXPECT_NE(x.fix.find("NCCL_SOCKET_IFNAME==ens2"), std::string::npos);
      EXPECT_NE(x.fix.find("GLOO_SOCKET_IFNAME=ens2"), std::string::npos);
    }
  EXPECT_TRUE(seen);
}

TEST(JudgeNet, IfnameMatchingNothingFails) {
  NetFacts f;
  f.interfaces = typical();
  f.settings.socket_ifname = "eth0";
  f.settings.socket_ifname_source = "environment";
  f.socket_ifname_list = parse_nccl_list("eth0", kNcclMaxSocketEntries);
  f.nccl_pick = nccl_pick(f.interfaces, f.settings, true);
  f.recommended = recommend_interface(f.interfaces, std::nullopt, true);
  auto findings = judge_net(f);
  ASSERT_FALSE(findings.empty());
  bool seen = false;
  for (const auto& x : findings)
    seen = seen || (x.code == "net.ifname_matches_nothing" && x.severity == Severity::kFail);
  EXPECT_TRUE(seen);
}

TEST(JudgeNet, IfnameOnlyLoopbackWarns) {
  NetFacts f;
  f.interfaces = typical();
  f.settings.socket_ifname = "lo";
  f.socket_ifname_list = parse_nccl_list("lo", kNcclMaxSocketEntries);
  f.socket_ifname_matched = {"lo"};
  f.nccl_pick = nccl_pick(f.interfaces, f.settings, true);
  f.recommended = recommend_interface(f.interfaces, std::nullopt, true);
  bool seen = false;
  for (const auto& x : judge_net(f))
    seen = seen || (x.code == "net.ifname_unusable" && x.severity == Severity::kWarn);
  EXPECT_TRUE(seen);
}

TEST(JudgeNet, MtuMismatchAmongNcclInterfaces) {
  NetFacts f;
  f.interfaces = typical();
  f.interfaces[3].mtu = 9000;
  f.nccl_pick = nccl_pick(f.interfaces, f.settings, true);
  f.recommended = recommend_interface(f.interfaces, std::nullopt, true);
  bool seen = false;
  for (const auto& x : judge_net(f)) seen = seen || x.code == "net.mtu_mismatch";
  EXPECT_TRUE(seen);
}

TEST(JudgeNet, NoUsableInterfaceFails) {
  NetFacts f;
  f.interfaces = {make("lo", "loopback", "127.0.0.1", 8, 1)};
  f.nccl_pick = nccl_pick(f.interfaces, f.settings, true);
  f.recommended = recommend_interface(f.interfaces, std::nullopt, true);
  bool seen = false;
  for (const auto& x : judge_net(f))
    seen = seen || (x.code == "net.no_usable_interface" && x.severity == Severity::kFail);
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace fabkit::probes
