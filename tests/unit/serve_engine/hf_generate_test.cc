// The decode engine's greedy tokens against Hugging Face transformers' generate() (the reference:
// hf_generate_reference.py, run by the .venv Python, FABKIT_PYTHON) on tiny random Llamas the
// script makes and save_pretrained()s: plain multi-head attention with tied embeddings, and
// grouped-query attention with a separate lm_head. The engine loads each folder with
// load_pretrained and runs every prompt in one batch, EOS as a stop token as generate() does (the
// script picks an EOS the first prompt meets early, so stopping is compared too).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/json.h"
#include "tests/support/ttar.h"
#include "tests/unit/serve_engine/token_collector.h"
#include "trainer/model/pretrained.h"
#include "trainer/serve/engine/decode_engine.h"

namespace fabkit::serve {
namespace {
namespace fs = std::filesystem;

const char* kPython = FABKIT_PYTHON;

bool python_has_transformers() {
  static int rc = std::system(
      (std::string(kPython) + " -c 'import transformers, torch' >/dev/null 2>&1").c_str());
  return rc == 0;
}

class HfGenerate : public ::testing::TestWithParam<const char*> {
 public:
  // One python run makes every case (importing torch and transformers takes seconds).
  static void SetUpTestSuite() {
    if (!python_has_transformers()) return;
    root_ = new fabkit::testing::TempDir("hf_generate");
    const std::string cmd = std::string(kPython) + " " + FABKIT_HF_GENERATE_SCRIPT + " --out " +
                            root_->path().string() + " 2>" +
                            (root_->path() / "stderr.txt").string();
    made_ = std::system(cmd.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    delete root_;
    root_ = nullptr;
  }

 protected:
  void SetUp() override {
    if (!python_has_transformers())
      GTEST_SKIP() << kPython << " cannot import transformers (./scripts/setup installs the pins "
                   << "of scripts/python-requirements.txt into .venv/)";
    ASSERT_TRUE(made_) << FABKIT_HF_GENERATE_SCRIPT << " failed: see "
                       << root_->path() / "stderr.txt";
  }
  static fabkit::testing::TempDir* root_;
  static bool made_;
};
fabkit::testing::TempDir* HfGenerate::root_ = nullptr;
bool HfGenerate::made_ = false;

TEST_P(HfGenerate, GreedyTokensEqualGenerate) {
  const fs::path dir = root_->path() / GetParam();
  Json ref = Json::parse(std::ifstream(dir / "generate.json"));
  trainer::LoadedModel loaded = trainer::load_pretrained(dir);
  ASSERT_FALSE(loaded.random_init) << "no weights in " << dir;
  DecodeEngineOptions options;
  options.max_batch = 4;
  DecodeEngine engine(loaded.model, options);

  const auto prompts = ref.at("prompts").get<std::vector<std::vector<int64_t>>>();
  const auto want = ref.at("generated").get<std::vector<std::vector<int64_t>>>();
  ASSERT_EQ(prompts.size(), want.size());
  std::vector<std::shared_ptr<testing::Collected>> got;
  for (const auto& prompt : prompts) {
    GenerationRequest r;
    r.prompt = prompt;
    r.max_tokens = ref.at("max_new_tokens").get<int64_t>();
    r.sampling.temperature = 0;
    r.stop_token_ids = {ref.at("eos_token_id").get<int64_t>()};
    got.push_back(std::make_shared<testing::Collected>());
    ASSERT_TRUE(engine.submit(r, testing::collect(got.back())));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(got[i]->wait_done()) << "prompt " << i;
    ASSERT_FALSE(want[i].empty());
    EXPECT_EQ(got[i]->tokens, want[i]) << GetParam() << " prompt " << i;
    const bool stopped = want[i].back() == ref.at("eos_token_id").get<int64_t>();
    EXPECT_EQ(got[i]->last.finish, stopped ? FinishReason::kStop : FinishReason::kLength);
  }
  EXPECT_LT(want[0].size(), static_cast<size_t>(ref.at("max_new_tokens").get<int64_t>()));
}

INSTANTIATE_TEST_SUITE_P(TinyLlamas, HfGenerate, ::testing::Values("llama_mha_tied", "llama_gqa"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace fabkit::serve
