#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "probes/rdma/rdma_facts.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

using testing::TempDir;
using testing::write_file;
using verbs::GidType;
using verbs::LinkLayer;
using verbs::PhysState;
using verbs::PortState;

bool has(const std::vector<Finding>& fs, const std::string& code, Severity sev) {
  for (const auto& f : fs)
    if (f.code == code && f.severity == sev) return true;
  return false;
}

RdmaFacts gather_ttar(const std::filesystem::path& ttar, const std::string& prefix, TempDir& dir) {
  testing::unpack_ttar(ttar, dir.path(), prefix);
  return gather_rdma_sysfs(dir.path() / "sys");
}

TEST(RdmaSysfs, ParsesCodedValuesAndRates) {
  EXPECT_EQ(parse_sysfs_coded("4: ACTIVE"), 4);
  EXPECT_EQ(parse_sysfs_coded("5: LinkUp"), 5);
  EXPECT_FALSE(parse_sysfs_coded("ACTIVE"));
  EXPECT_FALSE(parse_sysfs_coded("4:"));
  EXPECT_FALSE(parse_sysfs_coded("x4: ACTIVE"));
  EXPECT_FALSE(parse_sysfs_coded("99999999999999999999: ACTIVE"));
  EXPECT_EQ(parse_sysfs_rate_gbps("100 Gb/sec (4X EDR)"), 100.0);
  EXPECT_EQ(parse_sysfs_rate_gbps("2.5 Gb/sec (1X SDR)"), 2.5);
  EXPECT_FALSE(parse_sysfs_rate_gbps("fast"));
  EXPECT_FALSE(parse_sysfs_rate_gbps("100 Mb/sec"));
}

// prometheus/procfs's capture: hfi1 (Omni-Path), a 2-port mlx4 and an mlx5, no LIDs or GIDs.
TEST(RdmaSysfs, RealProcfsCapture) {
  TempDir dir("rdma_real");
  auto f = gather_ttar(testing::project_fixtures() / "real/sysfs/procfs_sys_class_infiniband.ttar",
                       "fixtures", dir);
  EXPECT_EQ(f.source, "sysfs");
  EXPECT_TRUE(f.errors.empty()) << f.errors.front().to_string();
  ASSERT_EQ(f.devices.size(), 3u);
  const auto& hfi = f.devices[0];
  EXPECT_EQ(hfi.name, "hfi1_0");
  EXPECT_EQ(hfi.fw_ver, "1.27.0");
  EXPECT_FALSE(hfi.node_guid);
  ASSERT_EQ(hfi.ports.size(), 1u);
  EXPECT_EQ(hfi.ports[0].state, PortState::kActive);
  EXPECT_EQ(hfi.ports[0].phys_state, PhysState::kLinkUp);
  EXPECT_EQ(hfi.ports[0].link_layer, LinkLayer::kInfiniBand);
  EXPECT_EQ(hfi.ports[0].rate_gbps, 100.0);
  EXPECT_EQ(hfi.ports[0].rate_text, "100 Gb/sec (4X EDR)");
  EXPECT_FALSE(hfi.ports[0].lid);  // not in the capture: unknown, not 0
  EXPECT_FALSE(hfi.ports[0].gids_known);
  const auto& mlx4 = f.devices[1];
  EXPECT_EQ(mlx4.name, "mlx4_0");
  ASSERT_EQ(mlx4.ports.size(), 2u);
  EXPECT_EQ(mlx4.ports[1].port, 2);
  EXPECT_EQ(mlx4.ports[1].link_layer, LinkLayer::kInfiniBand);  // file has a trailing blank line
  EXPECT_EQ(mlx4.ports[1].rate_gbps, 40.0);
  const auto& mlx5 = f.devices[2];
  EXPECT_EQ(mlx5.fw_ver, "14.28.2006");
  ASSERT_EQ(mlx5.ports.size(), 1u);
  // The capture's phys_state reads "4: ACTIVE"; the kernel derives the name from the code, so
  // the code (4 = PortConfigurationTraining) is what counts.
  EXPECT_EQ(mlx5.ports[0].phys_state, PhysState::kPortConfigurationTraining);
  EXPECT_EQ(mlx5.ports[0].rate_gbps, 25.0);

  auto findings = judge_rdma(f);
  EXPECT_TRUE(has(findings, "rdma.mixed_rates", Severity::kWarn));
  EXPECT_FALSE(has(findings, "rdma.lid_zero", Severity::kFail));  // LID unknown: no claim
  EXPECT_EQ(worst_severity(findings), Severity::kWarn);
  Json j = to_json(f);
  EXPECT_EQ(j["devices"][1]["ports"][1]["rate_gbps"], 40.0);
  EXPECT_TRUE(j["devices"][0]["ports"][0]["lid"].is_null());
}

// The capture stores mlx5_0/node_guid without a final newline (ttar's "EOF" suffix).
TEST(RdmaSysfs, RealProcfsCaptureNodeGuid) {
  TempDir dir("rdma_real_guid");
  auto f = gather_ttar(testing::project_fixtures() / "real/sysfs/procfs_sys_class_infiniband.ttar",
                       "fixtures", dir);
  ASSERT_EQ(f.devices.size(), 3u);
  EXPECT_EQ(f.devices[2].node_guid, "0a7f:bc12:45ef:d23b");
}

TEST(RdmaSysfs, IbHdrAndRoceV2Tree) {
  TempDir dir("rdma_own");
  auto f = gather_ttar(testing::project_fixtures() / "rdma/sysfs_ib_hdr_roce_v2.ttar", "", dir);
  ASSERT_TRUE(f.errors.empty()) << f.errors.front().to_string();
  ASSERT_EQ(f.devices.size(), 2u);
  const auto& ib = f.devices[0].ports.at(0);
  EXPECT_EQ(f.devices[0].node_guid, "b859:9f03:00d6:5b3e");
  EXPECT_EQ(ib.rate_gbps, 200.0);
  EXPECT_EQ(ib.lid, 12);
  EXPECT_EQ(ib.sm_lid, 1);
  EXPECT_EQ(ib.netdev, "ib0");
  ASSERT_EQ(ib.gids.size(), 1u);  // 7 all-zero slots skipped
  EXPECT_EQ(ib.gids[0].type, GidType::kIb);
  EXPECT_FALSE(ib.roce_v2_gid_index);
  const auto& roce = f.devices[1].ports.at(0);
  EXPECT_EQ(f.devices[1].name, "mlx5_2");
  EXPECT_EQ(roce.link_layer, LinkLayer::kEthernet);
  EXPECT_EQ(roce.lid, 0);
  EXPECT_EQ(roce.netdev, "ens1f0np0");
  ASSERT_EQ(roce.gids.size(), 4u);
  EXPECT_EQ(roce.gids[0].type, GidType::kRoceV1);  // "IB/RoCE v1" on an Ethernet port
  EXPECT_EQ(roce.gids[3].type, GidType::kRoceV2);
  EXPECT_EQ(roce.gids[3].gid, "0000:0000:0000:0000:0000:ffff:c612:0105");
  EXPECT_EQ(roce.roce_v2_gid_index, 3);  // the IPv4-mapped v2 entry, not index 1

  auto findings = judge_rdma(f);
  EXPECT_TRUE(has(findings, "rdma.mixed_link_layers", Severity::kWarn));
  EXPECT_TRUE(has(findings, "rdma.mixed_rates", Severity::kWarn));
  EXPECT_FALSE(has(findings, "rdma.lid_zero", Severity::kFail));  // LID 0 is normal on RoCE
  EXPECT_NE(worst_severity(findings), Severity::kFail);
  Json j = to_json(f)["devices"][1]["ports"][0];
  EXPECT_EQ(j["roce_v2_gid_index"], 3);
  EXPECT_EQ(j["gids"][3]["type"], "RoCE v2");
  EXPECT_EQ(j["gids"][3]["netdev"], "ens1f0np0");
  EXPECT_EQ(j["link_layer"], "Ethernet");
  EXPECT_EQ(j["state"], "ACTIVE");
}

TEST(RdmaSysfs, NoInfinibandClassMeansNoDevices) {
  TempDir dir("rdma_none");
  std::filesystem::create_directories(dir.path() / "sys/class/net");
  auto f = gather_rdma_sysfs(dir.path() / "sys");
  EXPECT_EQ(f.source, "none");
  EXPECT_TRUE(f.devices.empty());
  auto findings = judge_rdma(f);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].code, "rdma.no_devices");
  EXPECT_EQ(findings[0].severity, Severity::kInfo);
}

TEST(RdmaSysfs, MalformedAndMissingFilesBecomeErrors) {
  TempDir dir("rdma_bad");
  auto p = dir.path() / "sys/class/infiniband/mlx5_0/ports/1";
  write_file(p / "state", "ACTIVE\n");
  write_file(p / "phys_state", "5: LinkUp\n");
  write_file(p / "link_layer", "Ethernet\n");
  write_file(p / "lid", "zero\n");
  auto f = gather_rdma_sysfs(dir.path() / "sys");
  ASSERT_EQ(f.devices.size(), 1u);
  EXPECT_FALSE(f.devices[0].ports[0].state);
  ASSERT_EQ(f.errors.size(), 3u);  // state unparsable, rate missing, lid unparsable
  EXPECT_NE(f.errors[0].object.find("ports/1/state: 'ACTIVE'"), std::string::npos);
  EXPECT_TRUE(has(judge_rdma(f), "rdma.gather_error", Severity::kWarn));
}

TEST(RdmaSysfs, PortNetdevByDevPortOnMultiPortFunctions) {
  TempDir dir("rdma_mlx4");
  auto d = dir.path() / "sys/class/infiniband/mlx4_0";
  for (int port : {1, 2}) {
    auto p = d / "ports" / std::to_string(port);
    write_file(p / "state", "4: ACTIVE\n");
    write_file(p / "phys_state", "5: LinkUp\n");
    write_file(p / "link_layer", "Ethernet\n");
    write_file(p / "rate", "40 Gb/sec (4X QDR)\n");
  }
  write_file(d / "device/net/eth2/dev_port", "0\n");
  write_file(d / "device/net/eth3/dev_port", "1\n");
  auto f = gather_rdma_sysfs(dir.path() / "sys");
  ASSERT_EQ(f.devices.at(0).ports.size(), 2u);
  EXPECT_EQ(f.devices[0].ports[0].netdev, "eth2");
  EXPECT_EQ(f.devices[0].ports[1].netdev, "eth3");
  EXPECT_FALSE(f.devices[0].ports[0].gids_known);  // no gids/ dir: no RoCE v2 claim either way
  EXPECT_FALSE(has(judge_rdma(f), "rdma.roce_no_v2_gid", Severity::kFail));
}

}  // namespace
}  // namespace fabkit::probes

namespace fabkit::probes {
namespace {

const Finding* find_code(const std::vector<Finding>& fs, const std::string& code, const std::string& subject) {
  for (const auto& f : fs)
    if (f.code == code && f.subject == subject) return &f;
  return nullptr;
}

// The real capture (prometheus/procfs): counters/ on every port, hw_counters/ on mlx5_0 with
// local_ack_timeout_err 131 and req_cqe_error 3481. A capture is one moment: those are reported
// as counts since the last reset, not as rising.
TEST(RdmaCounters, RealCaptureCountsSinceResetAreInfo) {
  testing::TempDir dir("rdma-counters");
  testing::unpack_ttar(testing::project_fixtures() / "real/sysfs/procfs_sys_class_infiniband.ttar", dir.path(),
                       "fixtures/");
  RdmaFacts f = gather_rdma_sysfs(dir.path() / "sys");
  read_port_counters(dir.path() / "sys", f, 0);
  const RdmaPort* mlx5 = nullptr;
  for (const auto& d : f.devices)
    if (d.name == "mlx5_0") mlx5 = &d.ports.at(0);
  ASSERT_NE(mlx5, nullptr);
  EXPECT_EQ(mlx5->counters.at("local_ack_timeout_err"), 131u);
  EXPECT_EQ(mlx5->counters.at("req_cqe_error"), 3481u);
  EXPECT_EQ(mlx5->counters.at("symbol_error"), 0u);
  EXPECT_TRUE(mlx5->counter_deltas.empty());
  auto out = judge_rdma(f);
  const Finding* counts = find_code(out, "rdma.port_error_counts", "mlx5_0:1");
  ASSERT_NE(counts, nullptr);
  EXPECT_EQ(counts->severity, Severity::kInfo);
  EXPECT_NE(counts->message.find("local_ack_timeout_err 131, req_cqe_error 3481"), std::string::npos) << counts->message;
  EXPECT_EQ(find_code(out, "rdma.port_error_counts", "mlx4_0:1"), nullptr);  // port_xmit_wait 3599: congestion, not errors
  EXPECT_EQ(to_json(f)["devices"][0]["ports"][0]["counters"].is_object(), true);
}

// What rose during the interval is judged (the pure judge on gathered facts), and a counter
// pegged at its width's maximum is named: it no longer counts.
TEST(RdmaCounters, RisingErrorsWarnAndSaturatedCountersAreNamed) {
  RdmaFacts f;
  f.source = "sysfs";
  f.counter_interval_ms = 100;
  RdmaDevice d;
  d.name = "mlx5_3";
  RdmaPort p;
  p.port = 1;
  p.state = verbs::PortState::kActive;
  p.phys_state = verbs::PhysState::kLinkUp;
  p.link_layer = verbs::LinkLayer::kInfiniBand;
  p.counters = {{"symbol_error", 1207}, {"link_downed", 3}, {"port_xmit_wait", 4294967295u},
                {"local_ack_timeout_err", 12}, {"port_rcv_errors", 0}};
  p.counter_deltas = {{"symbol_error", 40}, {"local_ack_timeout_err", 2}};
  d.ports.push_back(p);
  f.devices.push_back(d);
  auto out = judge_rdma(f);
  const Finding* link = find_code(out, "rdma.port_errors_rising", "mlx5_3:1");
  ASSERT_NE(link, nullptr);
  EXPECT_EQ(link->severity, Severity::kWarn);
  EXPECT_NE(link->message.find("rose during 100 ms: symbol_error +40"), std::string::npos) << link->message;
  const Finding* transport = find_code(out, "rdma.transport_errors_rising", "mlx5_3:1");
  ASSERT_NE(transport, nullptr);
  EXPECT_NE(transport->message.find("local_ack_timeout_err +2"), std::string::npos);
  const Finding* pegged = find_code(out, "rdma.counter_saturated", "mlx5_3:1");
  ASSERT_NE(pegged, nullptr);
  EXPECT_NE(pegged->message.find("port_xmit_wait =4294967295"), std::string::npos) << pegged->message;
  EXPECT_NE(pegged->message.find("congestion accounting is lost"), std::string::npos);
  // With an interval, counts that did not rise are not reported as counts since reset.
  EXPECT_EQ(find_code(out, "rdma.port_error_counts", "mlx5_3:1"), nullptr);
}

// gpud's healthy H100 capture (leptonai/gpud@4a8de33a, components/accelerator/nvidia/infiniband/
// class/testdata/sys-class-infiniband-h100.0): every port's 4-bit excessive_buffer_overrun_errors
// reads 15 and mlx5_1's 8-bit link_downed 255. The 4-bit one alone is a note; the 8-bit one warns.
TEST(RdmaCounters, APeggedFourBitCounterAloneIsANote) {
  RdmaFacts f;
  for (auto [name, counters] :
       std::vector<std::pair<std::string, std::map<std::string, uint64_t>>>{
           {"mlx5_0", {{"excessive_buffer_overrun_errors", 15}, {"link_downed", 0}}},
           {"mlx5_1", {{"excessive_buffer_overrun_errors", 15}, {"link_downed", 255}}}}) {
    RdmaDevice d;
    d.name = name;
    RdmaPort p;
    p.port = 1;
    p.state = verbs::PortState::kActive;
    p.phys_state = verbs::PhysState::kLinkUp;
    p.link_layer = verbs::LinkLayer::kInfiniBand;
    p.rate_gbps = 400;
    p.counters = counters;
    d.ports.push_back(p);
    f.devices.push_back(d);
  }
  auto out = judge_rdma(f);
  const Finding* narrow = find_code(out, "rdma.counter_saturated", "mlx5_0:1");
  ASSERT_NE(narrow, nullptr);
  EXPECT_EQ(narrow->severity, Severity::kInfo);
  const Finding* wide = find_code(out, "rdma.counter_saturated", "mlx5_1:1");
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(wide->severity, Severity::kWarn);
  EXPECT_NE(wide->message.find("link_downed =255"), std::string::npos) << wide->message;
}

// Read twice over an interval: the rise between the reads is the delta (a live run's path).
TEST(RdmaCounters, TwoReadsGiveTheRise) {
  testing::TempDir dir("rdma-counter-rise");
  const auto port = dir.path() / "sys/class/infiniband/mlx5_0/ports/1";
  testing::write_file(port / "counters/symbol_error", "5\n");
  testing::write_file(port / "hw_counters/req_cqe_error", "100\n");
  RdmaFacts f;
  RdmaDevice d;
  d.name = "mlx5_0";
  RdmaPort p;
  p.port = 1;
  d.ports.push_back(p);
  f.devices.push_back(d);
  std::thread bump([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    testing::write_file(port / "counters/symbol_error", "9\n");
  });
  read_port_counters(dir.path() / "sys", f, 400);
  bump.join();
  EXPECT_EQ(f.counter_interval_ms, 400);
  EXPECT_EQ(f.devices[0].ports[0].counters.at("symbol_error"), 9u);
  EXPECT_EQ(f.devices[0].ports[0].counter_deltas.at("symbol_error"), 4u);
  EXPECT_EQ(f.devices[0].ports[0].counter_deltas.count("req_cqe_error"), 0u);  // unchanged
}

// rxe has no PMA counters/, only the driver's 64-bit hw_counters/ (drivers/infiniband/sw/rxe/
// rxe_hw_counters.c), per port, and a device seen from a non-initial namespace has none: what is
// there is read, and rxe's link_downed is not a PMA counter pegged at 255.
TEST(RdmaCounters, SoftRoceHwCountersAreReadAndDoNotSaturate) {
  testing::TempDir dir("rdma-rxe-counters");
  const auto port = dir.path() / "sys/class/infiniband/rxe0/ports/1";
  testing::write_file(port / "hw_counters/link_downed", "300\n");
  testing::write_file(port / "hw_counters/sent_pkts", "123456\n");
  testing::write_file(port / "hw_counters/retry_exceeded_err", "0\n");
  testing::write_file(port / "hw_counters/lifespan", "10\n");
  testing::write_file(dir.path() / "sys/class/infiniband/rxe1/ports/1/state", "4: ACTIVE\n");
  RdmaFacts f;
  for (const char* name : {"rxe0", "rxe1"}) {
    RdmaDevice d;
    d.name = name;
    RdmaPort p;
    p.port = 1;
    p.state = PortState::kActive;
    p.link_layer = LinkLayer::kEthernet;
    p.netdev = "eth0";
    p.netdev_place = NetdevPlace::kHere;
    d.ports.push_back(p);
    f.devices.push_back(d);
  }
  read_port_counters(dir.path() / "sys", f, 0);
  const RdmaPort& rxe0 = f.devices[0].ports[0];
  EXPECT_EQ(rxe0.counter_dirs, std::vector<std::string>{"hw_counters"});
  EXPECT_EQ(rxe0.counters.at("sent_pkts"), 123456u);
  EXPECT_EQ(rxe0.counters.at("link_downed"), 300u);
  EXPECT_TRUE(f.devices[1].ports[0].counter_dirs.empty());
  EXPECT_TRUE(f.devices[1].ports[0].counters.empty());
  auto out = judge_rdma(f);
  EXPECT_FALSE(has(out, "rdma.counter_saturated", Severity::kWarn));
  EXPECT_TRUE(has(out, "rdma.port_error_counts", Severity::kInfo));  // link_downed 300
  Json j = to_json(f)["devices"][0]["ports"][0];
  EXPECT_EQ(j["counter_dirs"], Json::array({"hw_counters"}));
  EXPECT_EQ(j["counters"]["sent_pkts"], 123456);
}

}  // namespace
}  // namespace fabkit::probes
