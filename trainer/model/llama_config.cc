#include "trainer/model/llama_config.h"

#include <unistd.h>

#include <cstdio>
#include <limits>

#include "common/errors.h"
#include "common/regular_file.h"
#include "common/json_read.h"

namespace fabkit::trainer {
namespace {

class Fields {
 public:
  Fields(const Json& doc, std::string source) : doc_(doc), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw UsageError(source_ + ": field \"" + field + "\" " + what);
  }

  bool has(const std::string& f) const { return doc_.contains(f) && !doc_.at(f).is_null(); }

  // max_value: one of the limits in llama_config.h; unsigned integers past int64 (1e19) and
  // floats such as 1e7 are refused by type or by that limit, never wrapped.
  int64_t integer(const std::string& f, std::optional<int64_t> def, int64_t min_value,
                  int64_t max_value = std::numeric_limits<int64_t>::max()) const {
    if (!has(f)) {
      if (def) return *def;
      fail(f, "is missing; HF Llama/Mistral configs always carry it");
    }
    const Json& v = doc_.at(f);
    if (!v.is_number_integer()) fail(f, "must be an integer, found " + v.dump());
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max_value))
      over_limit(f, v, max_value);
    int64_t x = v.get<int64_t>();
    if (x < min_value) fail(f, "must be >= " + std::to_string(min_value) + ", found " + v.dump());
    if (x > max_value) over_limit(f, v, max_value);
    return x;
  }

  [[noreturn]] void over_limit(const std::string& f, const Json& v, int64_t max_value) const {
    fail(f, "is " + v.dump() + ", over fabtrain's limit of " + std::to_string(max_value) +
                " for it (several times any published Llama/Mistral; docs/trainer-model.md, "
                "\"Limits\"): fix the value");
  }

  double number(const std::string& f, double def, bool positive) const {
    if (!has(f)) return def;
    const Json& v = doc_.at(f);
    if (!v.is_number()) fail(f, "must be a number, found " + v.dump());
    double x = v.get<double>();
    if (positive && !(x > 0)) fail(f, "must be > 0, found " + v.dump());
    return x;
  }

  bool boolean(const std::string& f, bool def) const {
    if (!has(f)) return def;
    if (!doc_.at(f).is_boolean()) fail(f, "must be true or false, found " + doc_.at(f).dump());
    return doc_.at(f).get<bool>();
  }

  std::string text(const std::string& f, const std::string& def) const {
    if (!has(f)) return def;
    if (!doc_.at(f).is_string()) fail(f, "must be a string, found " + doc_.at(f).dump());
    return doc_.at(f).get<std::string>();
  }

  // HF allows a list of eos ids (Llama 3); the first one ends generated text and packs examples.
  std::optional<int64_t> token_id(const std::string& f) const {
    if (!has(f)) return std::nullopt;
    const Json& v = doc_.at(f);
    const Json& x = (v.is_array() && !v.empty()) ? v.at(0) : v;
    if (!x.is_number_integer() || x.get<int64_t>() < 0)
      fail(f, "must be a non-negative integer token id, found " + v.dump());
    return x.get<int64_t>();
  }

 private:
  const Json& doc_;
  std::string source_;
};

}  // namespace

LlamaConfig parse_llama_config(const Json& doc, const std::string& source) {
  if (!doc.is_object()) throw UsageError(source + ": expected a JSON object (an HF config.json)");
  Fields f(doc, source);
  LlamaConfig c;
  if (f.has("architectures")) {
    const Json& a = doc.at("architectures");
    if (!a.is_array() || a.empty() || !a.at(0).is_string())
      f.fail("architectures", "must be a list of class names, found " + a.dump());
    c.architecture = a.at(0).get<std::string>();
  }
  std::string model_type = f.text("model_type", "llama");
  bool known = c.architecture == "LlamaForCausalLM" || c.architecture == "MistralForCausalLM";
  if (!known)
    f.fail("architectures", "is " + c.architecture +
                                "; fabtrain implements LlamaForCausalLM and MistralForCausalLM");
  if (model_type != "llama" && model_type != "mistral")
    f.fail("model_type", "is \"" + model_type + "\"; expected \"llama\" or \"mistral\"");

  c.hidden_size = f.integer("hidden_size", std::nullopt, 1, kMaxHiddenSize);
  c.intermediate_size = f.integer("intermediate_size", std::nullopt, 1, kMaxIntermediateSize);
  c.num_hidden_layers = f.integer("num_hidden_layers", std::nullopt, 1, kMaxHiddenLayers);
  c.num_attention_heads = f.integer("num_attention_heads", std::nullopt, 1, kMaxAttentionHeads);
  c.num_key_value_heads =
      f.integer("num_key_value_heads", c.num_attention_heads, 1, kMaxAttentionHeads);
  c.vocab_size = f.integer("vocab_size", std::nullopt, 1, kMaxVocabSize);
  c.max_position_embeddings = f.integer("max_position_embeddings", 2048, 1, kMaxPositionEmbeddings);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    f.fail("num_key_value_heads", "(" + std::to_string(c.num_key_value_heads) +
                                      ") must divide num_attention_heads (" +
                                      std::to_string(c.num_attention_heads) + ")");
  if (f.has("head_dim")) {
    c.head_dim = f.integer("head_dim", std::nullopt, 2, kMaxHeadDim);
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      f.fail("hidden_size", "(" + std::to_string(c.hidden_size) +
                                ") must be a multiple of num_attention_heads (" +
                                std::to_string(c.num_attention_heads) + ") when head_dim is absent");
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0)
    f.fail("head_dim", "must be even for rotary embeddings, found " + std::to_string(c.head_dim));
  c.rms_norm_eps = f.number("rms_norm_eps", 1e-6, true);
  c.rope_theta = f.number("rope_theta", 10000.0, true);
  // transformers >= 5 writes RoPE as "rope_parameters": {"rope_type", "rope_theta", ...}, no
  // top-level rope_theta; a scaled type there is refused as rope_scaling is below.
  if (f.has("rope_parameters")) {
    const Json& rp = doc.at("rope_parameters");
    if (!rp.is_object()) f.fail("rope_parameters", "must be an object, found " + rp.dump());
    const Json type = rp.value("rope_type", Json("default"));
    if (type != Json("default"))
      f.fail("rope_parameters",
             "has rope_type " + type.dump() +
                 "; only \"default\" RoPE is implemented: use a model without scaled RoPE");
    Fields rope_fields(rp, source + " rope_parameters");
    c.rope_theta = rope_fields.number("rope_theta", c.rope_theta, true);
  }
  c.initializer_range = f.number("initializer_range", 0.02, true);
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);
  // transformers >= 5 names it "dtype".
  c.torch_dtype = f.text("torch_dtype", f.text("dtype", "float32"));
  if (c.torch_dtype != "float32" && c.torch_dtype != "bfloat16" && c.torch_dtype != "float16")
    f.fail("torch_dtype", "is \"" + c.torch_dtype + "\"; expected float32, bfloat16 or float16");
  c.bos_token_id = f.token_id("bos_token_id");
  c.eos_token_id = f.token_id("eos_token_id");
  c.pad_token_id = f.token_id("pad_token_id");
  if (f.has("sliding_window"))
    c.sliding_window = f.integer("sliding_window", std::nullopt, 1, kMaxPositionEmbeddings);

  // Variants this implementation does not compute: refuse instead of training a different model.
  if (f.text("hidden_act", "silu") != "silu")
    f.fail("hidden_act", "is \"" + f.text("hidden_act", "") + "\"; only \"silu\" (SwiGLU) is implemented");
  if (f.has("rope_scaling"))
    f.fail("rope_scaling", "is set (" + doc.at("rope_scaling").dump() +
                               "); scaled RoPE is not implemented: remove it or use a model without it");
  if (f.boolean("attention_bias", false))
    f.fail("attention_bias", "is true; biased attention projections are not implemented");
  if (f.boolean("mlp_bias", false)) f.fail("mlp_bias", "is true; biased MLP projections are not implemented");
  if (f.integer("pretraining_tp", 1, 1) != 1)
    f.fail("pretraining_tp", "must be 1 (the split-matmul emulation is not implemented)");
  for (auto id : {c.bos_token_id, c.eos_token_id, c.pad_token_id})
    if (id && *id >= c.vocab_size)
      throw UsageError(source + ": a special token id (" + std::to_string(*id) +
                       ") is >= vocab_size (" + std::to_string(c.vocab_size) + ")");
  // Each field within its limit can still multiply into more than any host holds.
  if (const int64_t n = parameter_count(c); n > kMaxParameters)
    throw UsageError(
        source + ": the model would have " + std::to_string(n) + " parameters (from hidden_size " +
        std::to_string(c.hidden_size) + ", intermediate_size " +
        std::to_string(c.intermediate_size) + ", num_hidden_layers " +
        std::to_string(c.num_hidden_layers) + ", num_attention_heads " +
        std::to_string(c.num_attention_heads) + " x head_dim " + std::to_string(c.head_dim) +
        ", vocab_size " + std::to_string(c.vocab_size) + "), over fabtrain's limit of " +
        std::to_string(kMaxParameters) + " (docs/trainer-model.md, \"Limits\"): fix the sizes");
  return c;
}

int64_t parameter_count(const LlamaConfig& c) {
  // Each factor is within its limit (parse_llama_config), so no product here nears 2^63.
  const int64_t h = c.hidden_size, q = c.num_attention_heads * c.head_dim,
                kv = c.num_key_value_heads * c.head_dim;
  const int64_t layer = h * q + 2 * h * kv + q * h + 3 * h * c.intermediate_size + 2 * h;
  return c.vocab_size * h * (c.tie_word_embeddings ? 1 : 2) + c.num_hidden_layers * layer + h;
}

void check_model_fits_memory(const LlamaConfig& c, uint64_t memory_bytes,
                             const std::string& source) {
  const uint64_t need = static_cast<uint64_t>(parameter_count(c)) * sizeof(float);
  if (memory_bytes == 0 || need <= memory_bytes) return;  // 0: unknown, let the allocation say
  auto gib = [](uint64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1ull << 30));
    return std::string(buf);
  };
  throw UsageError(source + ": the model has " + std::to_string(parameter_count(c)) +
                   " parameters; fabtrain builds them in float32 on each rank's CPU first (" +
                   gib(need) + "), more than this host's memory (" + gib(memory_bytes) +
                   "): use a smaller config (num_hidden_layers " +
                   std::to_string(c.num_hidden_layers) + ", hidden_size " +
                   std::to_string(c.hidden_size) + ", vocab_size " + std::to_string(c.vocab_size) +
                   ") or a host with more memory");
}

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

LlamaConfig load_llama_config(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw UsageError(path.string() + ": cannot open the model config; --model must be a directory "
                                     "holding an HF config.json");
  // An HF config.json is a few KB; the limit keeps /dev/zero or a FIFO in its place from filling
  // memory or hanging the job.
  const std::string text =
      read_regular_file(path, 16ull << 20, "an HF config.json is a few KB");
  Json doc;
  try {
    doc = parse_json(text, path.string());
  } catch (const JsonReadError& e) {
    throw UsageError(e.what());
  }
  return parse_llama_config(doc, path.string());
}

Json to_hf_json(const LlamaConfig& c) {
  bool mistral = c.architecture == "MistralForCausalLM";
  Json j;
  j["architectures"] = Json::array({c.architecture});
  j["model_type"] = mistral ? "mistral" : "llama";
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  if (c.head_dim != c.hidden_size / c.num_attention_heads) j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["initializer_range"] = c.initializer_range;
  j["hidden_act"] = "silu";
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["torch_dtype"] = c.torch_dtype;
  j["bos_token_id"] = c.bos_token_id ? Json(*c.bos_token_id) : Json(nullptr);
  j["eos_token_id"] = c.eos_token_id ? Json(*c.eos_token_id) : Json(nullptr);
  if (c.pad_token_id) j["pad_token_id"] = *c.pad_token_id;
  if (mistral) j["sliding_window"] = c.sliding_window ? Json(*c.sliding_window) : Json(nullptr);
  return j;
}

}  // namespace fabkit::trainer
