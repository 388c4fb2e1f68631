#include <gtest/gtest.h>

#include <cerrno>
#include <fstream>

#include "fabkit/config.h"
#include "probes/rdma/rdma_facts.h"
#include "tests/support/ttar.h"
#include "verbs/fake_verbs_api.h"
#if FABKIT_HAVE_VERBS
#include "verbs/ibverbs_api.h"
#endif

namespace fabkit::probes {
namespace {

using verbs::FakeVerbsApi;

Json load(const std::string& name) {
  std::ifstream in(testing::project_fixtures() / "rdma" / name);
  return Json::parse(in);
}

TEST(FakeVerbsFixture, ReadsIbvDevinfoValues) {
  auto devs = verbs::load_fake_devices(load("cx5_roce_v2.json"));
  ASSERT_EQ(devs.size(), 2u);
  const auto& p = devs[0].ports.at(0);
  EXPECT_EQ(p.attr.state, verbs::PortState::kActive);
  EXPECT_EQ(p.attr.active_mtu, verbs::Mtu::k1024);
  EXPECT_EQ(p.attr.active_speed, verbs::Speed::kEdr);
  EXPECT_EQ(p.attr.gid_tbl_len, 256);
  ASSERT_EQ(p.gids.size(), 4u);
  EXPECT_EQ(p.gids[3].type, verbs::GidType::kRoceV2);
  EXPECT_EQ(verbs::ipv4_of(p.gids[3].gid), "198.18.1.5");
  EXPECT_EQ(p.gids[2].type, verbs::GidType::kRoceV1);
  EXPECT_EQ(p.gids[2].netdev, "ens1f0np0");
}

TEST(FakeVerbsFixture, BadFixtureNamesTheField) {
  Json j = load("cx6_ib_hdr.json");
  j["devices"][0]["ports"][0]["state"] = "PORT_ACTIVE";
  try {
    verbs::load_fake_devices(j);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("mlx5_0 port 1 state"), std::string::npos) << e.what();
  }
  j = load("cx6_ib_hdr.json");
  j["devices"][1]["phys_port_cnt"] = 2;
  EXPECT_THROW(verbs::load_fake_devices(j), std::invalid_argument);
}

TEST(RdmaVerbsGather, IbHdrThroughTheFake) {
  FakeVerbsApi api(verbs::load_fake_devices(load("cx6_ib_hdr.json")));
  ProbeContext ctx;
  ctx.roots = SystemRoots::under("/nonexistent-fabkit-root");
  ctx.verbs = &api;
  auto f = gather_rdma(ctx);
  EXPECT_EQ(f.source, "verbs");
  EXPECT_TRUE(f.errors.empty());
  ASSERT_EQ(device_count(f), 2u);
  EXPECT_TRUE(has_active_ports(f));
  const auto& d = f.devices[0];
  EXPECT_EQ(d.fw_ver, "20.31.1014");
  EXPECT_EQ(d.node_guid, "b859:9f03:00d6:5b3e");
  const auto& p = d.ports.at(0);
  EXPECT_EQ(p.rate_gbps, 200.0);
  EXPECT_EQ(p.rate_text, "200 Gb/sec (4X HDR)");
  EXPECT_EQ(p.active_mtu, 4096);
  EXPECT_EQ(p.lid, 12);
  EXPECT_EQ(p.sm_lid, 1);
  ASSERT_EQ(p.gids.size(), 1u);
  EXPECT_EQ(p.gids[0].type, verbs::GidType::kIb);
  EXPECT_TRUE(judge_rdma(f).empty());
}

TEST(RdmaVerbsGather, RoceThroughTheFakeMatchesSysfsFacts) {
  FakeVerbsApi api(verbs::load_fake_devices(load("cx5_roce_v2.json")));
  auto f = gather_rdma_verbs(api);
  ASSERT_EQ(f.devices.size(), 2u);
  const auto& p = f.devices[0].ports.at(0);
  EXPECT_EQ(p.link_layer, verbs::LinkLayer::kEthernet);
  EXPECT_EQ(p.active_mtu, 1024);
  EXPECT_EQ(p.rate_gbps, 100.0);
  EXPECT_EQ(p.netdev, "ens1f0np0");
  EXPECT_EQ(p.roce_v2_gid_index, 3);
  EXPECT_EQ(f.devices[1].ports[0].netdev, "ens1f1np1");
  Json j = to_json(f);
  EXPECT_EQ(j["source"], "verbs");
  EXPECT_EQ(j["devices"][0]["ports"][0]["gids"][3]["gid"], "0000:0000:0000:0000:0000:ffff:c612:0105");
  EXPECT_EQ(j["devices"][0]["ports"][0]["active_mtu"], 1024);
}

TEST(RdmaVerbsGather, VerbsErrorsFallBackToSysfs) {
  FakeVerbsApi api({});
  api.fail_next("ibv_get_device_list", EACCES);
  testing::TempDir dir("rdma_fallback");
  testing::unpack_ttar(testing::project_fixtures() / "rdma/sysfs_ib_hdr_roce_v2.ttar", dir.path(), "");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  ctx.verbs = &api;
  auto f = gather_rdma(ctx);
  EXPECT_EQ(f.source, "sysfs");
  EXPECT_EQ(f.devices.size(), 2u);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].call, "ibv_get_device_list");
}

TEST(RdmaVerbsGather, PortQueryFailureIsRecorded) {
  FakeVerbsApi api(verbs::load_fake_devices(load("cx6_ib_hdr.json")));
  api.fail_next("ibv_query_port", EIO);
  auto f = gather_rdma_verbs(api);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].object, "mlx5_0:1");
  EXPECT_TRUE(f.devices[0].ports.empty());
  EXPECT_EQ(f.devices[1].ports.size(), 1u);
}

// The real libibverbs on this machine: no RDMA device, and a kernel without InfiniBand.
TEST(IbverbsApi, ZeroDevicesOnThisMachine) {
#if FABKIT_HAVE_VERBS
  if (std::filesystem::exists("/sys/class/infiniband") &&
      !std::filesystem::is_empty("/sys/class/infiniband"))
    GTEST_SKIP() << "this machine has RDMA devices; the zero-device path needs a machine without";
  auto api = verbs::make_ibverbs_api();
  auto names = api->list_devices();
  ASSERT_TRUE(ok(names)) << error(names).to_string();
  EXPECT_TRUE(value(names).empty());
  auto q = api->query_device("mlx5_0");
  ASSERT_FALSE(ok(q));
  EXPECT_EQ(error(q).err, ENODEV);
  auto o = api->open_device("mlx5_0");
  ASSERT_FALSE(ok(o));
  ProbeContext ctx;
  ctx.verbs = api.get();
  auto f = gather_rdma(ctx);  // falls back to the real /sys: no devices here either
  EXPECT_TRUE(f.devices.empty());
  EXPECT_TRUE(f.errors.empty());
#else
  GTEST_SKIP() << "built without libibverbs (FABKIT_HAVE_VERBS=0)";
#endif
}

}  // namespace
}  // namespace fabkit::probes

#include "fabkit/config.h"
#if FABKIT_HAVE_VERBS
#include <infiniband/verbs.h>

#include "verbs/ibverbs_api.h"

namespace fabkit::verbs {
namespace {

// ibv_poll_cq(3): a completion's opcode is valid only when its status is IBV_WC_SUCCESS. The real
// conversion must not read an error completion's (garbage) opcode as a receive.
TEST(IbverbsCompletion, ErrorCompletionsAreNeverReadAsReceives) {
  ibv_wc wc{};
  wc.wr_id = 7;
  wc.status = IBV_WC_RETRY_EXC_ERR;
  wc.opcode = static_cast<ibv_wc_opcode>(0xffff);  // what a flushed or failed entry may hold
  wc.byte_len = 123456;
  WorkCompletion c = completion_from(wc);
  EXPECT_EQ(c.wr_id, 7u);
  EXPECT_EQ(c.status, IBV_WC_RETRY_EXC_ERR);
  EXPECT_FALSE(c.is_recv);
  EXPECT_EQ(c.byte_len, 0u);
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = IBV_WC_RECV;
  wc.byte_len = 64;
  c = completion_from(wc);
  EXPECT_TRUE(c.is_recv);
  EXPECT_EQ(c.byte_len, 64u);
}

}  // namespace
}  // namespace fabkit::verbs
#endif
