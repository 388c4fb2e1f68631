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

// transformers >= 5 writes "rope_parameters" and "dtype" instead of rope_theta and torch_dtype.
TEST(LlamaConfig, TransformersFiveRopeParametersAndDtype) {
  Json j = Json::parse(kTiny);
  j.erase("rope_theta");
  j.erase("torch_dtype");
  j["rope_parameters"] = {{"rope_theta", 250000.0}, {"rope_type", "default"}};
  j["dtype"] = "float16";
  LlamaConfig c = parse_llama_config(j, "cfg.json");
  EXPECT_DOUBLE_EQ(c.rope_theta, 250000.0);
  EXPECT_EQ(c.torch_dtype, "float16");
  j["rope_parameters"]["rope_type"] = "llama3";
  std::string m = message_of(j.dump());
  EXPECT_NE(m.find("rope_parameters"), std::string::npos) << m;
  EXPECT_NE(m.find("llama3"), std::string::npos) << m;
  j["rope_parameters"] = 5;
  EXPECT_NE(message_of(j.dump()).find("rope_parameters"), std::string::npos);
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

// Issue #19: num_hidden_layers = 1e7 allocated for 20 s before bad_alloc (exit 3). Every size
// field has a named limit, and so has their product, checked before anything is allocated.
TEST(LlamaConfig, SizeFieldsOverTheirLimitsAreNamed) {
  struct Case {
    const char* field;
    int64_t limit;
  } cases[] = {{"num_hidden_layers", kMaxHiddenLayers},
               {"hidden_size", kMaxHiddenSize},
               {"num_attention_heads", kMaxAttentionHeads},
               {"num_key_value_heads", kMaxAttentionHeads},
               {"head_dim", kMaxHeadDim},
               {"vocab_size", kMaxVocabSize},
               {"intermediate_size", kMaxIntermediateSize},
               {"max_position_embeddings", kMaxPositionEmbeddings},
               {"sliding_window", kMaxPositionEmbeddings}};
  for (const auto& c : cases) {
    for (const Json& value : {Json(10000000), Json(c.limit + 1), Json(10000000000000000000ull)}) {
      if (value.is_number_integer() && value.is_number_unsigned() == false &&
          value.get<int64_t>() <= c.limit)
        continue;
      Json j = Json::parse(kTiny);
      j[c.field] = value;
      const std::string m = message_of(j.dump());
      EXPECT_NE(m.find("cfg.json: field \"" + std::string(c.field) + "\" is " + value.dump() +
                       ", over fabtrain's limit of " + std::to_string(c.limit)),
                std::string::npos)
          << m;
    }
    Json j = Json::parse(kTiny);
    j[c.field] = c.limit;  // at the limit: the field itself is accepted (other checks may not be)
    const std::string m = message_of(j.dump());
    EXPECT_EQ(m.find("over fabtrain's limit"), std::string::npos) << c.field << ": " << m;
  }
  // 1e7 written as a float is not an integer at all.
  Json j = Json::parse(kTiny);
  j["num_hidden_layers"] = 1e7;
  EXPECT_NE(message_of(j.dump()).find("must be an integer"), std::string::npos);
}

TEST(LlamaConfig, ParameterProductOverTheLimitIsNamed) {
  Json j = Json::parse(kTiny);
  j["hidden_size"] = kMaxHiddenSize;
  j["intermediate_size"] = kMaxIntermediateSize;
  j["num_hidden_layers"] = kMaxHiddenLayers;
  j["num_attention_heads"] = 64;
  j["num_key_value_heads"] = 8;
  const std::string m = message_of(j.dump());
  EXPECT_NE(m.find("cfg.json: the model would have "), std::string::npos) << m;
  EXPECT_NE(m.find("over fabtrain's limit of 1000000000000"), std::string::npos) << m;
  EXPECT_NE(m.find("num_hidden_layers 1024"), std::string::npos) << m;
}

TEST(LlamaConfig, ModelThatWouldNotFitMemoryIsNamed) {
  Json j = Json::parse(kTiny);
  j["hidden_size"] = 4096;
  j["intermediate_size"] = 11008;
  j["num_hidden_layers"] = 32;
  j["num_attention_heads"] = 32;
  j["num_key_value_heads"] = 32;
  j["vocab_size"] = 32000;
  // Llama 2 7B's sizes (with kTiny's tied embeddings): within every limit.
  const LlamaConfig c = parse_llama_config(j, "cfg.json");
  EXPECT_EQ(parameter_count(c), 6607343616);
  EXPECT_NO_THROW(check_model_fits_memory(c, 64ull << 30, "cfg.json"));
  try {
    check_model_fits_memory(c, 16ull << 30, "cfg.json");
    FAIL() << "a 26 GB float32 model fit in 16 GiB";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cfg.json: the model has 6607343616 parameters"), std::string::npos) << m;
    EXPECT_NE(m.find("(24.6 GiB), more than this host's memory (16.0 GiB)"), std::string::npos)
        << m;
  }
  EXPECT_NO_THROW(check_model_fits_memory(c, 0, "cfg.json"));  // memory unknown
  EXPECT_GT(physical_memory_bytes(), 0u);
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
