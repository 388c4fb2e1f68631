// Reads a Hugging Face tokenizer.json into what HfTokenizer runs, accepting exactly the byte-level
// BPE subset fabkit reproduces (GPT-2, Llama 3 and Mistral-style files) and rejecting every other
// feature with an error naming the file and the field: a feature that was ignored would silently
// produce other ids than the model was trained with.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "trainer/tokenizer/added_tokens.h"
#include "trainer/tokenizer/bpe_model.h"
#include "trainer/tokenizer/pcre2_regex.h"

namespace fabkit::trainer {

// HF's SplitDelimiterBehavior: what happens to the matched text.
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct PreTokenizerStep {
  enum class Kind { kSplit, kByteLevel } kind = Kind::kSplit;
  std::shared_ptr<const Pcre2Regex> regex;  // Split's pattern; ByteLevel's GPT-2 pattern when use_regex
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;            // Split: the text between matches is what splits
  bool add_prefix_space = false;  // ByteLevel: a space before each piece that lacks one
};

struct HfTokenizerSpec {
  BpeModel model;
  std::vector<AddedToken> added_tokens;
  // Splits first, ByteLevel last (ByteLevel also maps every piece to its byte-level characters).
  std::vector<PreTokenizerStep> pre_tokenizer;
  // post_processor's TemplateProcessing "single": the ids around $A (empty without a template).
  std::vector<int64_t> template_prefix, template_suffix;
};

// GPT-2's split pattern, which ByteLevel uses when use_regex is true (HF byte_level.rs).
extern const char* const kGpt2SplitPattern;

// UsageError "FILE: field F: ..." for a malformed or unsupported document.
HfTokenizerSpec parse_tokenizer_json(const nlohmann::json& doc, const std::string& file);

}  // namespace fabkit::trainer
