// `fabtrain --reduce-dtype` end to end (issue #20): 2 Gloo ranks reducing their gradients in bf16
// track the fp32-reduced run, and bad values stop before training with the flag named.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "tests/integration/trainer/run_support.h"
#include "tests/support/ttar.h"

namespace fs = std::filesystem;

namespace fabkit::testing {
namespace {

class FabtrainReduceDtype : public ::testing::Test {
 public:
  FabtrainReduceDtype() : dir_("fabtrain_reduce") {
    write_tiny_model(dir_.path() / "model", false);
    write_token_data(dir_.path() / "train.jsonl", 40, 30, 300);
    setenv("FABTRAIN_CONTROL_DIR", (dir_.path() / "ctl").c_str(), 1);
  }
  ~FabtrainReduceDtype() override { unsetenv("FABTRAIN_CONTROL_DIR"); }
  // On CPU (the Gloo path, also on a GPU machine); 2 ranks unless `more` says --nproc.
  std::vector<std::string> args(const std::string& out,
                                const std::vector<std::string>& more) const {
    std::vector<std::string> a{"--model",  (dir_.path() / "model").string(),
                               "--data",   (dir_.path() / "train.jsonl").string(),
                               "--output", (dir_.path() / out).string()};
    for (const char* f : {"--max-length=16", "--lr=3e-3", "--warmup-steps=1", "--seed=1",
                          "--collective-timeout-ms=20000", "--device=cpu"}) {
      a.push_back(f);
    }
    if (std::find(more.begin(), more.end(), "--nproc") == more.end()) {
      a.insert(a.end(), {"--nproc", "2", "--micro-batch-size", "2", "--max-steps", "6"});
    }
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  std::vector<double> metric(const std::string& out, const char* name) const {
    std::vector<double> v;
    for (const auto& j : read_jsonl(dir_.path() / out / "metrics.jsonl")) {
      if (j.contains("loss")) v.push_back(j[name].is_null() ? std::nan("") : j[name].get<double>());
    }
    return v;
  }
  TempDir dir_;
};

// The bf16-reduced run (lb, gb) against the fp32-reduced one (lf, gf), step by step: loss within
// 1e-3 and gradient norm within 1e-2 relative, and not identical (else nothing was reduced in
// bf16). Returns the largest relative differences {loss, grad norm}.
std::pair<double, double> expect_tracks(const std::vector<double>& lf, const std::vector<double>& lb,
                                        const std::vector<double>& gf,
                                        const std::vector<double>& gb) {
  double max_loss_rel = 0, max_grad_rel = 0;
  for (size_t i = 0; i < lf.size() && i < lb.size() && i < gf.size() && i < gb.size(); ++i) {
    EXPECT_NEAR(lb[i], lf[i], 1e-3 * lf[i]) << "step " << i + 1;
    EXPECT_NEAR(gb[i], gf[i], 1e-2 * gf[i]) << "step " << i + 1;
    max_loss_rel = std::max(max_loss_rel, std::abs(lb[i] - lf[i]) / lf[i]);
    max_grad_rel = std::max(max_grad_rel, std::abs(gb[i] - gf[i]) / gf[i]);
  }
  EXPECT_GT(max_grad_rel, 0.0)
      << "gradient norms identical: the gradients were not reduced in bf16";
  return {max_loss_rel, max_grad_rel};
}

// bf16 compute: each rank's gradients are bf16 already, so casting them for the wire loses
// nothing, and Gloo sums the bf16 chunks in fp32 in the order the fp32 reduction does: the run
// equals the fp32-reduced one exactly (tolerance 0; on NCCL, which sums in bf16, it would not).
TEST_F(FabtrainReduceDtype, Bf16ReduceWithBf16ComputeOnTwoGlooRanksEqualsTheFp32Reduce) {
  auto f = run_fabtrain(args("f32-reduce", {"--torch-dtype", "bfloat16"}));
  ASSERT_EQ(f.exit_code, 0) << f.output;
  EXPECT_NE(f.output.find("gradients reduce-scattered in float32 over 2 replicas"),
            std::string::npos)
      << f.output;
  auto b =
      run_fabtrain(args("bf16-reduce", {"--torch-dtype", "bfloat16", "--reduce-dtype", "bf16"}));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("gradients reduce-scattered in bfloat16 over 2 replicas"),
            std::string::npos)
      << b.output;
  // The loop's precision line says the same (it said "gradient reduction float32" regardless).
  EXPECT_NE(b.output.find("optimizer state float32; gradient reduction bfloat16"),
            std::string::npos)
      << b.output;
  const auto lf = metric("f32-reduce", "loss"), lb = metric("bf16-reduce", "loss");
  ASSERT_EQ(lf.size(), 6u);
  EXPECT_LT(lb.back(), lb.front()) << "the bf16-reduced run learns";
  EXPECT_EQ(lb, lf);
  EXPECT_EQ(metric("bf16-reduce", "grad_norm"), metric("f32-reduce", "grad_norm"));
}

// fp32 compute with a bf16 reduction (FSDP's MixedPrecision(param_dtype=None, reduce_dtype=bf16)):
// the reduction rounds each rank's fp32 gradient to 8 significant bits before the sum (at most
// 2^-8 relative per element; Gloo then sums in fp32). The step-1 loss is computed before any
// update, so it is the same; later losses move by the rounding's effect on AdamW's steps. Held to
// 0.1% (losses) and 1% (gradient norms: 2^-8 is 0.4% for the step-1 gradient, and the weights
// drift apart a little after it); measured on this machine: 1.0e-5 and 1.1e-4 at most over the 6
// steps. They must differ at all, or nothing was rounded.
TEST_F(FabtrainReduceDtype, Bf16ReduceWithFp32ComputeOnTwoGlooRanksTracksTheFp32Reduce) {
  auto f = run_fabtrain(args("f32-reduce", {}));
  ASSERT_EQ(f.exit_code, 0) << f.output;
  auto b = run_fabtrain(args("bf16-reduce", {"--reduce-dtype", "bf16"}));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("gradients reduce-scattered in bfloat16 over 2 replicas"),
            std::string::npos)
      << b.output;
  const auto lf = metric("f32-reduce", "loss"), lb = metric("bf16-reduce", "loss");
  const auto gf = metric("f32-reduce", "grad_norm"), gb = metric("bf16-reduce", "grad_norm");
  ASSERT_EQ(lf.size(), 6u);
  ASSERT_EQ(lb.size(), lf.size());
  EXPECT_LT(lb.back(), lb.front()) << "the bf16-reduced run learns";
  EXPECT_DOUBLE_EQ(lb[0], lf[0]) << "step 1's forward runs before any reduction";
  const auto [max_loss_rel, max_grad_rel] = expect_tracks(lf, lb, gf, gb);
  std::printf(
      "[ reduce   ] 6 steps, fp32 compute: losses fp32-reduce %.5f -> %.5f, bf16-reduce %.5f -> "
      "%.5f; "
      "max rel diff: loss %.2e, grad norm %.2e\n",
      lf.front(), lf.back(), lb.front(), lb.back(), max_loss_rel, max_grad_rel);
}

// The pipeline engine reduces through the same ShardedModel, over each stage's replicas: 4 ranks
// as 2 stages x 2 replicas, fp32 compute, 4 steps. Same tolerances as above.
TEST_F(FabtrainReduceDtype, Bf16ReduceInAPipelineOfTwoStagesTimesTwoReplicasTracksTheFp32Reduce) {
  const std::vector<std::string> pp{"--nproc", "4",           "--pp", "2", "--micro-batch-size",
                                    "1",       "--max-steps", "4"};
  auto f = run_fabtrain(args("pp-f32-reduce", pp));
  ASSERT_EQ(f.exit_code, 0) << f.output;
  std::vector<std::string> bf = pp;
  bf.insert(bf.end(), {"--reduce-dtype", "bf16"});
  auto b = run_fabtrain(args("pp-bf16-reduce", bf));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  EXPECT_NE(b.output.find("gradients reduce-scattered in bfloat16 over 2 replicas"),
            std::string::npos)
      << b.output;
  const auto lf = metric("pp-f32-reduce", "loss"), lb = metric("pp-bf16-reduce", "loss");
  const auto gf = metric("pp-f32-reduce", "grad_norm"), gb = metric("pp-bf16-reduce", "grad_norm");
  ASSERT_EQ(lf.size(), 4u);
  ASSERT_EQ(lb.size(), lf.size());
  EXPECT_DOUBLE_EQ(lb[0], lf[0]) << "step 1's forward runs before any reduction";
  const auto [max_loss_rel, max_grad_rel] = expect_tracks(lf, lb, gf, gb);
  std::printf(
      "[ reduce   ] pipeline 2x2, 4 steps: max rel diff bf16- vs fp32-reduce: loss %.2e, grad norm "
      "%.2e\n",
      max_loss_rel, max_grad_rel);
}

// Bad values: exit non-zero before training, naming the flag and what to use instead.
TEST_F(FabtrainReduceDtype, BadValuesAreRefusedNamingTheFlag) {
  for (const char* bad : {"fp16", "float16", "int8"}) {
    SCOPED_TRACE(bad);
    auto r = run_fabtrain(args(std::string("bad-") + bad, {"--reduce-dtype", bad}), 60);
    EXPECT_EQ(r.exit_code, 2) << r.output;  // bad usage, as every fabtrain refusal
    EXPECT_NE(r.output.find("--reduce-dtype"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("bf16"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir_.path() / (std::string("bad-") + bad) / "metrics.jsonl"))
        << "it trained";
  }
  auto r = run_fabtrain(args("bad-fp16-why", {"--reduce-dtype", "fp16"}), 60);
  EXPECT_NE(r.output.find("overflows"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace fabkit::testing
