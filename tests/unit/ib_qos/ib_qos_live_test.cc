// The live gather on this machine's kernel: without /dev/infiniband/umad* (this machine, CI) it
// reports an "unavailable" fact and no finding at warn; on a host that has umad devices the case
// that needs their absence is skipped with the reason.
#include <gtest/gtest.h>

#include "probes/ib_qos/ib_qos_facts.h"
#include "probes/ib_qos/mad_transport.h"
#include "probes/nccl_env/nccl_env_facts.h"
#include "probes/rdma/rdma_facts.h"
#include "tests/support/ttar.h"

namespace fabkit::probes {
namespace {

bool host_has_umad() {
  for (const auto& name : list_dir("/dev/infiniband"))
    if (name.rfind("umad", 0) == 0) return true;
  return false;
}

TEST(IbQosLive, NoUmadDeviceIsAnUnavailableFact) {
  fabkit::testing::TempDir dev("ibqos-dev");  // an empty /dev: no infiniband/ at all
  auto t = make_live_mad_transport(dev.path());
  EXPECT_NE(t->unavailable().find("no " + (dev.path() / "infiniband" / "umad*").string()),
            std::string::npos)
      << t->unavailable();
  IbQosPort p;
  p.device = "mlx5_0";
  p.port = 1;
  p.active = true;
  read_ib_port_qos(*t, p, "");
  EXPECT_EQ(p.status, "unavailable");
  IbQosFacts f;
  f.ports.push_back(p);
  for (const auto& x : judge_ib_qos(f)) EXPECT_LT(x.severity, Severity::kWarn) << x.code;
}

TEST(IbQosLive, ThisMachine) {
  if (host_has_umad())
    GTEST_SKIP() << "this host has /dev/infiniband/umad*: the absent case "
                    "needs a host without them";
  ProbeContext ctx;
  ctx.roots = SystemRoots::live_system("");
  auto f = gather_ib_qos(ctx, gather_rdma(ctx), gather_nccl_env(ctx));
  EXPECT_EQ(f.source, "live");
  EXPECT_EQ(f.transport_status, "unavailable");
  EXPECT_NE(f.transport_detail.find("no /dev/infiniband/umad*"), std::string::npos)
      << f.transport_detail;
  for (const auto& p : f.ports) EXPECT_EQ(p.status, "unavailable");
  for (const auto& x : judge_ib_qos(f)) EXPECT_LT(x.severity, Severity::kWarn) << x.code;
  EXPECT_EQ(to_json(f)["transport_status"], "unavailable");
}

}  // namespace
}  // namespace fabkit::probes
