// A Hugging Face tokenizer.json with a byte-level BPE model (GPT-2, Llama 3 and Mistral-style
// files), reproducing the `tokenizers` library's encode and decode token for token: added and
// special tokens found first, then the pre-tokenizer splits (PCRE2), the byte-level map, BPE.
// hf_tokenizer_json.h lists what is accepted; everything else is rejected when loading.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trainer/tokenizer/hf_tokenizer_json.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::trainer {

// What the files beside tokenizer.json say about EOS and PAD (tokenizer.json itself does not):
// ids from config.json, token text from tokenizer_config.json.
struct SpecialTokenHints {
  std::optional<int64_t> eos_id, pad_id;
  std::optional<std::string> eos_token, pad_token;
};

class HfTokenizer : public Tokenizer {
 public:
  HfTokenizer(HfTokenizerSpec spec, std::string file, const SpecialTokenHints& hints);

  std::string kind() const override { return "tokenizer.json"; }
  // HF's encode(text, add_special_tokens=False): added tokens in the text become their ids (as
  // with the library; text is not escaped); UsageError for text that is not UTF-8.
  std::vector<int64_t> encode(const std::string& text) const override;
  // HF's decode(ids, skip_special_tokens=False): byte-level characters back to bytes, ill-formed
  // UTF-8 (a token that ends inside a character) as U+FFFD. UsageError for an unknown id.
  std::string decode(const std::vector<int64_t>& ids) const override;
  // The post-processor template's token before $A (Llama 3's <|begin_of_text|>); none without a
  // template (GPT-2), as HF adds none then.
  std::optional<int64_t> bos_id() const override { return bos_; }
  int64_t eos_id() const override { return eos_; }
  std::optional<int64_t> pad_id() const override { return pad_; }
  int64_t vocab_size() const override { return vocab_size_; }
  // An added token (tokenizer.json added_tokens) whose content is exactly `token`.
  std::optional<int64_t> special_token_id(const std::string& token) const override;

  // HF's encode(text, add_special_tokens=True): encode() inside the post-processor's template.
  std::vector<int64_t> encode_with_template(const std::string& text) const;
  const std::string& file() const { return file_; }

 private:
  void encode_text(std::string_view text, std::vector<int64_t>& out) const;
  std::optional<int64_t> token_id(const std::string& text) const;

  HfTokenizerSpec spec_;
  std::string file_;
  AddedTokenMatcher raw_matcher_, normalized_matcher_;  // normalized=false, then =true tokens
  std::unordered_map<std::string, int64_t> added_ids_;
  // A map, not a table: ids come from the file, and one id of 2^31 - 1 must not cost gigabytes.
  std::unordered_map<int64_t, std::string> id_to_token_;  // added tokens take precedence
  int64_t vocab_size_ = 0;  // the largest id + 1, what an embedding needs
  std::optional<int64_t> bos_, pad_;
  int64_t eos_ = 0;
};

// Reads and checks `file` (a tokenizer.json). UsageError naming the file and field for invalid
// JSON, an unsupported feature, or no EOS anywhere (hints, or the template's token after $A).
std::unique_ptr<HfTokenizer> load_hf_tokenizer(const std::filesystem::path& file,
                                               const SpecialTokenHints& hints = {});

}  // namespace fabkit::trainer
