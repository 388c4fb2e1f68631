#include "tests/unit/ib_qos/fixture_run.h"

#include <gtest/gtest.h>

#include "common/file_reader.h"
#include "common/json_read.h"
#include "probes/nccl_env/nccl_env_facts.h"
#include "probes/rdma/rdma_facts.h"

namespace fabkit::probes {

using fabkit::testing::TempDir;

Gathered run_fixture(const std::string& name, const TempDir& dir) {
  const auto file = fabkit::testing::project_fixtures() / "ib_qos" / (name + ".json");
  auto text = read_text(file);
  EXPECT_TRUE(ok(text)) << file;
  Json fx = parse_json(value(text), file.string());
  fabkit::testing::unpack_ttar(
      fabkit::testing::project_fixtures() / "rdma" / "sysfs_ib_hdr_roce_v2.ttar", dir.path(), "");
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : fx["env"].items()) env[k] = v.get<std::string>();
  ctx.env = Environment(env);
  ctx.options.ib_qos_replay = file;
  Gathered g;
  g.facts = gather_ib_qos(ctx, gather_rdma_sysfs(ctx.roots.sys), gather_nccl_env(ctx));
  g.findings = judge_ib_qos(g.facts);
  return g;
}

}  // namespace fabkit::probes
