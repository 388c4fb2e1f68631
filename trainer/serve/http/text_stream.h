// Generated token ids to the text a client sees, piece by piece: incremental detokenization that
// never emits a broken UTF-8 sequence, and stop strings matched on the text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::serve {

// Decoding tokens one at a time is not decoding each alone: a character may span tokens (byte
// fallback, byte-level BPE) and SentencePiece drops or keeps a leading space depending on what
// precedes it. So each step decodes a short window of recent tokens and emits what it adds to the
// text already emitted (the method of Hugging Face's text-generation-inference), holding it back
// while it ends in an incomplete UTF-8 sequence or U+FFFD (what a tokenizer makes of one).
class IncrementalDecoder {
 public:
  explicit IncrementalDecoder(const trainer::Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  // The new text, possibly empty; always valid UTF-8.
  std::string add(int64_t token);
  // At the end: whatever is still held back, invalid bytes replaced with U+FFFD (utf8_clean).
  std::string flush();

 private:
  std::string decode(size_t begin, size_t end) const;
  const trainer::Tokenizer& tokenizer_;
  std::vector<int64_t> ids_;
  size_t prefix_ = 0;  // start of the window decoded for context
  size_t read_ = 0;    // tokens up to here have been emitted
};

// The length of the longest prefix of `text` that does not end inside a UTF-8 sequence that more
// bytes could still complete.
size_t complete_utf8_prefix(const std::string& text);

// Stop strings, matched on the generated text as OpenAI does: the text up to the first match is
// emitted, the stop string itself is not. Text that could be the start of a stop string is held
// back until the next piece shows whether it is.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Text safe to emit now. After a match, stopped() is true and later calls return "".
  std::string add(const std::string& text);
  // At the end without a match: the held-back text.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace fabkit::serve
