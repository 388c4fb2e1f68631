#include <gtest/gtest.h>

#include "common/errors.h"
#include "tests/support/ttar.h"
#include "trainer/model/llama_config.h"

namespace fabkit::trainer {
namespace {

const char* kTiny = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
  "max_position_embeddings": 128, "vocab_size": 300, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2})";

std::string message_of(const std::string& json) {
  try {
    parse_llama_config(Json::parse(json), "cfg.json");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(LlamaConfig, ParsesEveryField) {
  LlamaConfig c = parse_llama_config(Json::parse(kTiny), "cfg.json");
  EXPECT_EQ(c.hidden_size, 32);
  EXPECT_EQ(c.intermediate_size, 64);
  EXPECT_EQ(c.num_hidden_layers, 2);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.max_position_embeddings, 128);
  EXPECT_EQ(c.vocab_size, 300);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_id, 2);
  EXPECT_FALSE(c.pad_token_id.has_value());
  EXPECT_FALSE(c.sliding_window.has_value());
}

TEST(LlamaConfig, Defaults) {
  Json j = Json::parse(kTiny);
  j.erase("num_key_value_heads");
  j.erase("rope_theta");
  j.erase("tie_word_embeddings");
  LlamaConfig c = parse_llama_config(j, "cfg.json");
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.initializer_range, 0.02);
}

TEST(LlamaConfig, MistralSlidingWindowAndEosList) {
  Json j = Json::parse(kTiny);
  j["architectures"] = {"MistralForCausalLM"};
  j["model_type"] = "mistral";
  j["sliding_window"] = 16;
  j["eos_token_id"] = {2, 3};
  LlamaConfig c = parse_llama_config(j, "cfg.json");
  EXPECT_EQ(c.architecture, "MistralForCausalLM");
  EXPECT_EQ(c.sliding_window, 16);
  EXPECT_EQ(c.eos_token_id, 2);
}

TEST(LlamaConfig, MissingFieldNamesFileAndField) {
  for (const char* f : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                        "vocab_size"}) {
    Json j = Json::parse(kTiny);
    j.erase(f);
    std::string m = message_of(j.dump());
    EXPECT_NE(m.find("cfg.json"), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("\"") + f + "\""), std::string::npos) << m;
    EXPECT_NE(m.find("missing"), std::string::npos) << m;
  }
}

TEST(LlamaConfig, IllTypedAndInvalidValues) {
  struct Case {
    const char* field;
    Json value;
    const char* expect;
  } cases[] = {
      {"hidden_size", "32", "must be an integer"},
      {"hidden_size", 0, "must be >= 1"},
      {"num_key_value_heads", 3, "must divide"},
      {"rms_norm_eps", "tiny", "must be a number"},
      {"tie_word_embeddings", 1, "true or false"},
      {"torch_dtype", "int8", "float32, bfloat16"},
      {"architectures", {"GPT2LMHeadModel"}, "LlamaForCausalLM"},
      {"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}, "not implemented"},
      {"hidden_act", "gelu", "silu"},
      {"attention_bias", true, "not implemented"},
      {"eos_token_id", 999, ">= vocab_size"},
      {"bos_token_id", -1, "non-negative"},
  };
  for (const auto& c : cases) {
    Json j = Json::parse(kTiny);
    j[c.field] = c.value;
    std::string m = message_of(j.dump());
    EXPECT_NE(m.find(c.expect), std::string::npos) << c.field << ": " << m;
    EXPECT_NE(m.find("cfg.json"), std::string::npos) << m;
  }
}

TEST(LlamaConfig, FileErrors) {
  testing::TempDir dir("llama_config");
  EXPECT_THROW(load_llama_config(dir.path() / "config.json"), UsageError);
  testing::write_file(dir.path() / "config.json", "{ not json");
  try {
    load_llama_config(dir.path() / "config.json");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
}

TEST(LlamaConfig, HfJsonRoundTrip) {
  LlamaConfig c = parse_llama_config(Json::parse(kTiny), "cfg.json");
  LlamaConfig d = parse_llama_config(to_hf_json(c), "round-trip");
  EXPECT_EQ(d.hidden_size, c.hidden_size);
  EXPECT_EQ(d.num_key_value_heads, c.num_key_value_heads);
  EXPECT_EQ(d.tie_word_embeddings, c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(d.rope_theta, c.rope_theta);
  EXPECT_EQ(d.eos_token_id, c.eos_token_id);
}

}  // namespace
}  // namespace fabkit::trainer
