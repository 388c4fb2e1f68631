#include "common/errors.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::trainer {
namespace {
const char* const kSpecialText[] = {"<s>", "</s>", "<pad>", "<|im_start|>", "<|im_end|>"};
}

std::vector<int64_t> ByteTokenizer::encode(const std::string& text) const {
  std::vector<int64_t> out;
  out.reserve(text.size());
  for (unsigned char c : text) out.push_back(c);
  return out;
}

std::string ByteTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    if (id >= 0 && id < 256)
      out.push_back(static_cast<char>(id));
    else if (id >= kBos && id < kVocabSize)
      out += kSpecialText[id - kBos];
    else
      throw UsageError("byte tokenizer: id " + std::to_string(id) + " is outside its vocabulary (0.." +
                       std::to_string(kVocabSize - 1) + ")");
  }
  return out;
}

std::optional<int64_t> ByteTokenizer::special_token_id(const std::string& token) const {
  for (int64_t i = 0; i < kVocabSize - kBos; ++i)
    if (token == kSpecialText[i]) return kBos + i;
  return std::nullopt;
}

}  // namespace fabkit::trainer
