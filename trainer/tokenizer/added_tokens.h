// tokenizer.json's added_tokens (special tokens such as <|begin_of_text|>, and user-added ones):
// found in the text before any pre-tokenization, as HF's AddedVocabulary does, so that they are
// single ids and never go through BPE.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fabkit::trainer {

struct AddedToken {
  int64_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;      // the match also takes the whitespace before it
  bool rstrip = false;      // ... and after it
  bool normalized = false;  // matched after the normalizer (fabkit accepts none, so: a second pass)
};

// A piece of the input: either an added token (id >= 0) or text still to be tokenized (id -1).
struct Piece {
  std::string_view text;
  int64_t id = -1;
};

// Leftmost-longest matching over one set of tokens (HF's aho-corasick with LeftmostLongest).
class AddedTokenMatcher {
 public:
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);
  bool empty() const { return tokens_.empty(); }
  // Splits `text` into added tokens and the text between them; empty text pieces are dropped.
  std::vector<Piece> split(std::string_view text) const;

 private:
  std::vector<AddedToken> tokens_;
  // First byte -> indices into tokens_, longest content first.
  std::unordered_map<unsigned char, std::vector<size_t>> by_first_byte_;
};

}  // namespace fabkit::trainer
