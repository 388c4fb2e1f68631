#include <gtest/gtest.h>

#include <chrono>

#include <torch/csrc/autograd/grad_mode.h>

#include "common/errors.h"
#include "tests/support/ttar.h"
#include "trainer/model/llama.h"
#include "trainer/model/lm_loss.h"
#include "trainer/model/pretrained.h"

namespace fabkit::trainer {
namespace {
namespace fs = std::filesystem;

LlamaConfig tiny(bool tied = false, int64_t kv_heads = 2) {
  Json j = {{"hidden_size", 32}, {"intermediate_size", 48}, {"num_hidden_layers", 2},
            {"num_attention_heads", 4}, {"num_key_value_heads", kv_heads}, {"vocab_size", 97},
            {"tie_word_embeddings", tied}, {"pad_token_id", 0}, {"eos_token_id", 2}};
  return parse_llama_config(j, "test");
}

TEST(LlamaModel, HfNamesOrderAndShapes) {
  LlamaModel m(tiny());
  auto p = m->hf_named_parameters();
  ASSERT_EQ(p.size(), 1u + 2 * 9 + 2);
  EXPECT_EQ(p[0].first, "model.embed_tokens.weight");
  const char* layer0[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                          "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "input_layernorm",
                          "post_attention_layernorm"};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(p[1 + i].first, std::string("model.layers.0.") + layer0[i] + ".weight");
  EXPECT_EQ(p[10].first, "model.layers.1.self_attn.q_proj.weight");
  EXPECT_EQ(p[19].first, "model.norm.weight");
  EXPECT_EQ(p[20].first, "lm_head.weight");
  EXPECT_EQ(p[0].second.sizes(), (std::vector<int64_t>{97, 32}));
  EXPECT_EQ(p[2].second.sizes(), (std::vector<int64_t>{16, 32}));  // k_proj: 2 kv heads x 8
  EXPECT_EQ(p[5].second.sizes(), (std::vector<int64_t>{48, 32}));  // gate_proj
  EXPECT_EQ(p[7].second.sizes(), (std::vector<int64_t>{32, 48}));  // down_proj
  LlamaModel t(tiny(true));
  EXPECT_EQ(t->hf_named_parameters().back().first, "model.norm.weight");
}

// parameter_count (what the config limits and the memory check reason about) is what the model
// really allocates.
TEST(LlamaModel, ParameterCountIsWhatTheModelAllocates) {
  for (bool tied : {false, true})
    for (int64_t kv : {1, 2, 4}) {
      const LlamaConfig c = tiny(tied, kv);
      LlamaModel m(c);
      int64_t numel = 0;
      for (const auto& p : m->parameters()) numel += p.numel();
      EXPECT_EQ(parameter_count(c), numel) << "tied " << tied << ", kv heads " << kv;
    }
}

TEST(LlamaModel, SeededInitFollowsHf) {
  LlamaModel a(tiny(), torch::kFloat32, 7), b(tiny(), torch::kFloat32, 7), c(tiny(), torch::kFloat32, 8);
  auto pa = a->hf_named_parameters(), pb = b->hf_named_parameters(), pc = c->hf_named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(at::equal(pa[i].second, pb[i].second)) << pa[i].first;
  EXPECT_FALSE(at::equal(pa[1].second, pc[1].second));
  EXPECT_TRUE(at::equal(pa[8].second, at::ones({32})));  // input_layernorm
  EXPECT_TRUE(at::equal(pa[0].second[0], at::zeros({32})));  // pad_token_id row
  double std = pa[5].second.std().item<double>();
  EXPECT_NEAR(std, 0.02, 0.002);
  EXPECT_NEAR(pa[5].second.mean().item<double>(), 0.0, 0.002);
}

TEST(LlamaModel, PiecesComposeToForwardAndAreCausal) {
  torch::NoGradGuard ng;
  LlamaModel m(tiny(), torch::kFloat32, 1);
  auto ids = at::randint(0, 97, {2, 9}, at::kLong);
  auto logits = m->forward(ids);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, 9, 97}));
  auto h = m->embed(ids);
  auto rope = m->rope(9);
  auto bias = m->attention_bias(9);
  for (auto& layer : m->layers()) h = layer->forward(h, rope, bias);
  EXPECT_TRUE(at::allclose(m->lm_head(m->final_norm(h)), logits));
  auto changed = ids.clone();
  changed[0][6] = (ids[0][6].item<int64_t>() + 1) % 97;
  auto l2 = m->forward(changed);
  EXPECT_TRUE(at::allclose(l2.slice(1, 0, 6), logits.slice(1, 0, 6)));
  EXPECT_FALSE(at::allclose(l2.slice(1, 6), logits.slice(1, 6)));
}

TEST(LlamaModel, RightPaddingLeavesRealTokensUnchanged) {
  torch::NoGradGuard ng;
  LlamaModel m(tiny(), torch::kFloat32, 2);
  auto ids = at::randint(3, 97, {1, 6}, at::kLong);
  auto alone = m->forward(ids);
  auto padded = at::cat({ids, at::zeros({1, 3}, at::kLong)}, 1);
  auto mask = at::cat({at::ones({1, 6}, at::kLong), at::zeros({1, 3}, at::kLong)}, 1);
  auto out = m->forward(padded, mask);
  EXPECT_TRUE(at::allclose(out.slice(1, 0, 6), alone, 1e-5, 1e-6));
  // Left padding with explicit positions: the real tokens see positions 0..5 as before.
  auto left = at::cat({at::zeros({1, 3}, at::kLong), ids}, 1);
  auto lmask = at::cat({at::zeros({1, 3}, at::kLong), at::ones({1, 6}, at::kLong)}, 1);
  auto pos = at::clamp_min(lmask.cumsum(1) - 1, 0);
  auto lout = m->forward(left, lmask, pos);
  EXPECT_TRUE(at::allclose(lout.slice(1, 3), alone, 1e-5, 1e-5));
}

TEST(LlamaModel, TiedHeadUsesEmbedding) {
  torch::NoGradGuard ng;
  LlamaModel m(tiny(true), torch::kFloat32, 3);
  auto h = at::randn({1, 2, 32});
  EXPECT_TRUE(at::allclose(m->lm_head(h), at::matmul(h, m->hf_named_parameters()[0].second.t())));
}

TEST(LlamaModel, Bf16CloseToFp32) {
  torch::NoGradGuard ng;
  LlamaModel f(tiny(), torch::kFloat32, 4), b(tiny(), torch::kBFloat16, 4);
  EXPECT_EQ(b->hf_named_parameters()[3].second.scalar_type(), at::kBFloat16);
  auto ids = at::randint(0, 97, {1, 8}, at::kLong);
  auto lf = f->forward(ids), lb = b->forward(ids);
  EXPECT_EQ(lb.scalar_type(), at::kBFloat16);
  EXPECT_LT((lb.to(at::kFloat) - lf).abs().max().item<float>(), 0.05f);
}

TEST(LmLoss, MatchesManualShiftedCrossEntropy) {
  auto logits = at::randn({2, 4, 5});
  auto labels = at::tensor(std::vector<int64_t>{0, 1, 2, 3, kIgnoreLabel, 4, kIgnoreLabel, 0}).reshape({2, 4});
  LmLoss l = causal_lm_loss(logits, labels);
  EXPECT_EQ(l.tokens, 5);  // targets are labels[:,1:]: 1,2,3 | 4,0 (the -100 at [1][2] skipped)
  double sum = 0;
  auto lp = at::log_softmax(logits, -1);
  int targets[2][3] = {{1, 2, 3}, {4, -100, 0}};
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t)
      if (targets[b][t] >= 0) sum -= lp[b][t][targets[b][t]].item<double>();
  EXPECT_NEAR(l.sum.item<double>(), sum, 1e-5);
  EXPECT_NEAR(l.mean().item<double>(), sum / 5, 1e-6);
}

class PretrainedTest : public ::testing::Test {
 protected:
  testing::TempDir dir{"pretrained"};
};

TEST_F(PretrainedTest, ConfigOnlyDirectoryStartsFromSeededInit) {
  testing::write_file(dir.path() / "config.json", to_hf_json(tiny()).dump());
  LoadedModel a = load_pretrained(dir.path(), {torch::kFloat32, 5});
  LoadedModel b = load_pretrained(dir.path(), {torch::kFloat32, 5});
  EXPECT_TRUE(a.random_init);
  EXPECT_TRUE(at::equal(a.model->hf_named_parameters()[1].second, b.model->hf_named_parameters()[1].second));
}

// The report's case end to end: a config with num_hidden_layers 10000000 is refused at once with
// the field and the limit (exit 2), not after 20 s of allocation (bad_alloc, exit 3).
TEST_F(PretrainedTest, HugeConfigIsRefusedBeforeAnyAllocation) {
  Json j = to_hf_json(tiny());
  j["num_hidden_layers"] = 10000000;
  testing::write_file(dir.path() / "config.json", j.dump());
  const auto t0 = std::chrono::steady_clock::now();
  try {
    load_pretrained(dir.path());
    FAIL() << "a 10000000-layer model was built";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("field \"num_hidden_layers\" is 10000000, over "
                                         "fabtrain's limit of 1024"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
}

TEST_F(PretrainedTest, SaveLoadRoundTripSingleAndSharded) {
  torch::NoGradGuard ng;
  for (uint64_t shard : {kDefaultMaxShardBytes, uint64_t{8000}}) {
    LlamaModel m(tiny(), torch::kFloat32, 9);
    fs::path out = dir.path() / ("m" + std::to_string(shard));
    auto files = save_pretrained(*m, out, shard);
    EXPECT_EQ(files.size() > 2, shard == 8000u);
    LoadedModel l = load_pretrained(out);
    EXPECT_FALSE(l.random_init);
    EXPECT_TRUE(l.ignored_tensors.empty());
    auto ids = at::randint(0, 97, {1, 5}, at::kLong);
    EXPECT_TRUE(at::equal(l.model->forward(ids), m->forward(ids)));
  }
}

TEST_F(PretrainedTest, Bf16WeightsLoadIntoFp32AndStrictModeRefuses) {
  LlamaModel m(tiny(), torch::kBFloat16, 9);
  save_pretrained(*m, dir.path());
  LoadedModel l = load_pretrained(dir.path(), {torch::kFloat32, 0, true});
  EXPECT_TRUE(at::equal(l.model->hf_named_parameters()[1].second,
                        m->hf_named_parameters()[1].second.to(at::kFloat)));
  try {
    load_pretrained(dir.path(), {torch::kFloat32, 0, false});
    FAIL();
  } catch (const UsageError& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("model.embed_tokens.weight"), std::string::npos) << w;
    EXPECT_NE(w.find("is BF16 but the model parameter is F32"), std::string::npos) << w;
  }
}

std::string load_error(const fs::path& dir) {
  try {
    load_pretrained(dir);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST_F(PretrainedTest, MismatchedCheckpointsNameFileTensorAndOffset) {
  LlamaModel m(tiny(), torch::kFloat32, 9);
  auto params = m->hf_named_parameters();
  testing::write_file(dir.path() / "config.json", to_hf_json(tiny()).dump());
  auto with = [&](const std::string& name, at::Tensor t) {
    auto p = params;
    for (auto& nt : p)
      if (nt.first == name) nt.second = t;
    write_safetensors(dir.path() / "model.safetensors", p);
  };
  with("model.layers.1.mlp.up_proj.weight", at::zeros({48, 31}));
  std::string e = load_error(dir.path());
  EXPECT_NE(e.find("model.safetensors: tensor \"model.layers.1.mlp.up_proj.weight\" (data offset"),
            std::string::npos) << e;
  EXPECT_NE(e.find("has shape [48, 31] but the model expects [48, 32]"), std::string::npos) << e;

  with("model.norm.weight", at::ones({32}, at::kLong));
  e = load_error(dir.path());
  EXPECT_NE(e.find("\"model.norm.weight\""), std::string::npos) << e;
  EXPECT_NE(e.find("is I64"), std::string::npos) << e;

  auto p = params;
  p.erase(p.begin() + 4);  // model.layers.0.self_attn.o_proj.weight
  write_safetensors(dir.path() / "model.safetensors", p);
  e = load_error(dir.path());
  EXPECT_NE(e.find("\"model.layers.0.self_attn.o_proj.weight\" is missing"), std::string::npos) << e;

  p = params;
  p.emplace_back("model.layers.0.self_attn.rotary_emb.inv_freq", at::ones({4}));
  write_safetensors(dir.path() / "model.safetensors", p);
  LoadedModel l = load_pretrained(dir.path());
  ASSERT_EQ(l.ignored_tensors.size(), 1u);
  EXPECT_EQ(l.ignored_tensors[0], "model.layers.0.self_attn.rotary_emb.inv_freq");
}

TEST_F(PretrainedTest, NotADirectoryAndPickleOnly) {
  EXPECT_THROW(load_pretrained(dir.path() / "nope"), UsageError);
  testing::write_file(dir.path() / "config.json", to_hf_json(tiny()).dump());
  testing::write_file(dir.path() / "pytorch_model.bin", "x");
  EXPECT_NE(load_error(dir.path()).find("pytorch_model.bin"), std::string::npos);
}

}  // namespace
}  // namespace fabkit::trainer
