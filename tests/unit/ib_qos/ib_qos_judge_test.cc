// The judge on facts built in the test: one case per rule, each with the healthy counterpart that
// must stay quiet.
#include <gtest/gtest.h>

#include "probes/ib_qos/ib_qos_facts.h"

namespace fabkit::probes {
namespace {

IbQosFacts one_port() {
  IbQosFacts f;
  IbQosPort p;
  p.device = "mlx5_0";
  p.port = 1;
  p.active = true;
  p.gid = "fe80::1";
  p.status = "ok";
  p.port_info = PortInfoQos{12, 1, 0, 4, 4, 4};  // VLCap VL0-7, OperVLs VL0-7
  p.sl2vl = std::array<int, 16>{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7};
  IbPathQuery q;
  q.dgid = "fe80::1";
  q.status = "ok";
  q.record = PathRecordQos{};
  p.paths.push_back(q);
  f.ports.push_back(p);
  return f;
}

std::vector<std::string> warn_codes(const IbQosFacts& f) {
  std::vector<std::string> out;
  for (const auto& x : judge_ib_qos(f))
    if (x.severity >= Severity::kWarn) out.push_back(x.code);
  return out;
}

TEST(IbQosJudge, HealthyPortIsQuiet) { EXPECT_TRUE(warn_codes(one_port()).empty()); }

TEST(IbQosJudge, DefaultSlZeroOnVl15Fails) {
  auto f = one_port();
  (*f.ports[0].sl2vl)[0] = 15;
  EXPECT_EQ(warn_codes(f), std::vector<std::string>{"ib_qos.sl_to_vl15"});
  auto fs = judge_ib_qos(f);
  EXPECT_NE(fs[0].message.find("NCCL's default SL 0"), std::string::npos);
}

TEST(IbQosJudge, SlOnAVlPastOperationalVlsFails) {
  auto f = one_port();
  f.nccl_ib_sl = "5";
  f.nccl_ib_sl_source = "environment";
  f.ports[0].paths[0].record->sl = 5;  // the SM agrees on the SL: only the mapping is wrong
  f.ports[0].port_info->oper_vls = 3;  // VL0-3: SL 5 -> VL5 is not operational
  EXPECT_EQ(warn_codes(f), std::vector<std::string>{"ib_qos.sl_vl_not_operational"});
  f.nccl_ib_sl = "3";  // VL3: inside VL0-3
  f.ports[0].paths[0].record->sl = 3;
  EXPECT_TRUE(warn_codes(f).empty());
}

TEST(IbQosJudge, UnknownOperationalVlsIsNotAFailure) {
  auto f = one_port();
  f.nccl_ib_sl = "5";
  f.ports[0].paths[0].record->sl = 5;
  f.ports[0].port_info->oper_vls = 0;  // not set by an SM yet
  EXPECT_TRUE(warn_codes(f).empty());
}

TEST(IbQosJudge, InactivePortIsNotJudgedForTheMapping) {
  auto f = one_port();
  f.ports[0].active = false;
  (*f.ports[0].sl2vl)[0] = 15;
  EXPECT_TRUE(warn_codes(f).empty());
}

TEST(IbQosJudge, PathRecordSlDiffersWarnsForEachPath) {
  auto f = one_port();
  f.ports[0].paths[0].record->sl = 1;
  IbPathQuery peer = f.ports[0].paths[0];
  peer.dgid = "fe80::2";
  peer.record->sl = 2;
  f.ports[0].paths.push_back(peer);
  auto fs = judge_ib_qos(f);
  std::vector<std::string> fixes;
  for (const auto& x : fs)
    if (x.code == "ib_qos.path_sl_differs") fixes.push_back(x.fix.substr(0, 19));
  EXPECT_EQ(fixes, (std::vector<std::string>{"export NCCL_IB_SL=1", "export NCCL_IB_SL=2"}));
}

TEST(IbQosJudge, NcclIbSlOutOfRangeWarns) {
  auto f = one_port();
  f.nccl_ib_sl = "16";
  f.nccl_ib_sl_source = "/etc/nccl.conf";
  EXPECT_EQ(warn_codes(f), std::vector<std::string>{"ib_qos.nccl_sl_invalid"});
  bool invalid = false;
  EXPECT_EQ(nccl_sl(f, &invalid), 0);
  EXPECT_TRUE(invalid);
  f.nccl_ib_sl = "7";
  EXPECT_EQ(nccl_sl(f, &invalid), 7);
  EXPECT_FALSE(invalid);
}

TEST(IbQosJudge, UnreadablePortIsInfo) {
  auto f = one_port();
  f.ports[0].status = "unavailable";
  f.ports[0].detail = "unavailable: no /dev/infiniband/umad*";
  auto fs = judge_ib_qos(f);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].code, "ib_qos.unavailable");
  EXPECT_EQ(fs[0].severity, Severity::kInfo);
}

}  // namespace
}  // namespace fabkit::probes
