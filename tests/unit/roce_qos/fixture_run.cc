#include "tests/unit/roce_qos/fixture_run.h"

#include <gtest/gtest.h>

#include "common/file_reader.h"
#include "common/json_read.h"
#include "probes/nccl_env/nccl_env_facts.h"
#include "probes/rdma/rdma_facts.h"

namespace fabkit::probes {

using fabkit::testing::TempDir;

Gathered run_fixture(const std::string& name, const TempDir& dir) {
  const auto file = fabkit::testing::project_fixtures() / "roce_qos" / (name + ".json");
  auto text = read_text(file);
  EXPECT_TRUE(ok(text)) << file;
  Json fx = parse_json(value(text), file.string());
  fabkit::testing::unpack_ttar(
      fabkit::testing::project_fixtures() / "rdma" / "sysfs_ib_hdr_roce_v2.ttar", dir.path(), "");
  for (const auto& [path, content] : fx["sysfs"].items())
    fabkit::testing::write_file(dir.path() / "sys" / path, content.get<std::string>());
  ProbeContext ctx;
  ctx.roots = SystemRoots::under(dir.path());
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : fx["env"].items()) env[k] = v.get<std::string>();
  ctx.env = Environment(env);
  ctx.options.qos_replay = file;
  RdmaFacts rdma = gather_rdma_sysfs(ctx.roots.sys);
  Gathered g;
  g.facts = gather_roce_qos(ctx, rdma, gather_nccl_env(ctx));
  reread_roce_qos(g.facts, 50);
  g.findings = judge_roce_qos(g.facts);
  return g;
}

}  // namespace fabkit::probes
