// Text <-> token ids. Three implementations: SentencePiece (tokenizer.model, as Llama-2 and Mistral
// ship), Hugging Face tokenizer.json with a byte-level BPE model (GPT-2, Llama 3; hf_tokenizer.h),
// and a byte-level tokenizer for tests and for models trained from scratch without one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fabkit::trainer {

// Every tokenizer file fabtrain reads (tokenizer.model, tokenizer.json, tokenizer_config.json,
// config.json) is a regular file of at most this size: the largest published tokenizer.json files
// (vocabularies of ~256k tokens) are a few tens of MB, and the limit keeps /dev/zero or a FIFO in a
// model directory from filling memory or hanging the job.
inline constexpr uint64_t kMaxTokenizerFileBytes = 256ull << 20;
inline constexpr const char* kTokenizerFileLimitWhy =
    "tokenizer files are at most a few tens of MB; a larger one is not a tokenizer";

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::string kind() const = 0;  // "sentencepiece" | "tokenizer.json" | "byte"
  // Plain text to ids: no BOS/EOS added (the data pipeline decides where those go).
  virtual std::vector<int64_t> encode(const std::string& text) const = 0;
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  virtual std::optional<int64_t> bos_id() const = 0;
  virtual int64_t eos_id() const = 0;
  virtual std::optional<int64_t> pad_id() const = 0;
  virtual int64_t vocab_size() const = 0;
  // The id of a special token that is a single piece of the vocabulary ("<|im_start|>"), if any.
  virtual std::optional<int64_t> special_token_id(const std::string& token) const = 0;
};

// 256 byte tokens (id = byte value) then <s>=256, </s>=257, <pad>=258, <|im_start|>=259,
// <|im_end|>=260: vocab_size 261.
class ByteTokenizer : public Tokenizer {
 public:
  static constexpr int64_t kBos = 256, kEos = 257, kPad = 258, kImStart = 259, kImEnd = 260;
  static constexpr int64_t kVocabSize = 261;
  std::string kind() const override { return "byte"; }
  std::vector<int64_t> encode(const std::string& text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  std::optional<int64_t> bos_id() const override { return kBos; }
  int64_t eos_id() const override { return kEos; }
  std::optional<int64_t> pad_id() const override { return kPad; }
  int64_t vocab_size() const override { return kVocabSize; }
  std::optional<int64_t> special_token_id(const std::string& token) const override;
};

// Loads a SentencePiece model file. BOS/EOS/PAD come from the model; where the model has none,
// the given fallbacks (config.json's ids) are used. UsageError naming the file when it is not a
// SentencePiece model or defines no EOS anywhere.
std::unique_ptr<Tokenizer> load_sentencepiece(const std::filesystem::path& model_file,
                                              std::optional<int64_t> bos_fallback = std::nullopt,
                                              std::optional<int64_t> eos_fallback = std::nullopt,
                                              std::optional<int64_t> pad_fallback = std::nullopt);

// SentencePieceTrainer::Train("--input=... --model_prefix=... --vocab_size=..."): builds a
// tokenizer.model (tests train a tiny one on text they write).
void train_sentencepiece(const std::string& args);

// DIR/tokenizer.model -> SentencePiece (special ids falling back to DIR/config.json); else
// DIR/tokenizer.json -> HfTokenizer (EOS/PAD from config.json's ids, else tokenizer_config.json's
// tokens; a tokenizer.json outside its byte-level BPE subset is a UsageError naming the field);
// no tokenizer files at all -> ByteTokenizer. tokenizer.model wins when both exist (Llama-2 and
// Mistral ship both; their tokenizer.json is SentencePiece-style BPE, which HfTokenizer rejects).
// When config.json is present, the tokenizer's vocabulary must fit in the model's vocab_size.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_dir);

}  // namespace fabkit::trainer
