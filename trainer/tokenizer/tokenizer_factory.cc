// load_tokenizer: which tokenizer a model directory holds, decided by its files as HF does.
#include "common/errors.h"
#include "common/regular_file.h"
#include "common/json.h"
#include "common/json_read.h"
#include "trainer/tokenizer/hf_tokenizer.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::trainer {
namespace fs = std::filesystem;
namespace {

Json read_json_object(const fs::path& file) {
  const std::string text = read_regular_file(file, kMaxTokenizerFileBytes, kTokenizerFileLimitWhy);
  Json j;
  try {
    j = parse_json(text, file.string());
  } catch (const JsonReadError& e) {
    throw UsageError(e.what());
  }
  if (!j.is_object()) throw UsageError(file.string() + ": expected a JSON object");
  return j;
}

std::optional<int64_t> config_id(const Json& cfg, const char* field) {
  if (!cfg.contains(field)) return std::nullopt;
  const Json& v = cfg.at(field);
  const Json& x = (v.is_array() && !v.empty()) ? v.at(0) : v;
  if (x.is_number_integer() && x.get<int64_t>() >= 0) return x.get<int64_t>();
  return std::nullopt;
}

// tokenizer_config.json writes a token as "text" or as {"content": "text", ...} (an AddedToken).
std::optional<std::string> config_token(const Json& cfg, const char* field) {
  if (!cfg.contains(field)) return std::nullopt;
  const Json& v = cfg.at(field);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v.at("content").is_string()) return v.at("content").get<std::string>();
  return std::nullopt;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const fs::path& dir) {
  Json cfg = Json::object();
  bool have_config = fs::exists(dir / "config.json");
  if (have_config) cfg = read_json_object(dir / "config.json");
  std::unique_ptr<Tokenizer> tok;
  if (fs::exists(dir / "tokenizer.model")) {
    tok = load_sentencepiece(dir / "tokenizer.model", config_id(cfg, "bos_token_id"),
                             config_id(cfg, "eos_token_id"), config_id(cfg, "pad_token_id"));
  } else if (fs::exists(dir / "tokenizer.json")) {
    SpecialTokenHints hints{config_id(cfg, "eos_token_id"), config_id(cfg, "pad_token_id"), {}, {}};
    if (fs::exists(dir / "tokenizer_config.json")) {
      Json tc = read_json_object(dir / "tokenizer_config.json");
      hints.eos_token = config_token(tc, "eos_token");
      hints.pad_token = config_token(tc, "pad_token");
    }
    tok = load_hf_tokenizer(dir / "tokenizer.json", hints);
  } else {
    tok = std::make_unique<ByteTokenizer>();
  }
  if (have_config && cfg.contains("vocab_size") && cfg.at("vocab_size").is_number_integer() &&
      tok->vocab_size() > cfg.at("vocab_size").get<int64_t>())
    throw UsageError(dir.string() + ": the " + tok->kind() + " tokenizer has " +
                     std::to_string(tok->vocab_size()) + " tokens but config.json vocab_size is " +
                     cfg.at("vocab_size").dump() + "; raise vocab_size or use the model's tokenizer");
  return tok;
}

}  // namespace fabkit::trainer
