#include "trainer/tokenizer/hf_tokenizer.h"

#include <algorithm>
#include "common/errors.h"
#include "common/regular_file.h"
#include "common/json_read.h"
#include "trainer/tokenizer/byte_level.h"

namespace fabkit::trainer {
namespace {

std::vector<AddedToken> with_normalized(const std::vector<AddedToken>& all, bool normalized) {
  std::vector<AddedToken> out;
  for (const auto& t : all)
    if (t.normalized == normalized) out.push_back(t);
  return out;
}

// HF's Pattern::find_matches + NormalizedString::split: the pieces of `s` a Split step keeps.
std::vector<std::string> split_piece(const std::string& s, const PreTokenizerStep& step) {
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> parts;  // (range, is_match)
  size_t prev = 0;
  for (auto [b, e] : step.regex->find_all(s)) {
    if (prev != b) parts.push_back({{prev, b}, false});
    parts.push_back({{b, e}, true});
    prev = e;
  }
  if (prev != s.size()) parts.push_back({{prev, s.size()}, false});
  if (step.invert)
    for (auto& p : parts) p.second = !p.second;

  std::vector<std::pair<std::pair<size_t, size_t>, bool>> kept;  // (range, remove)
  bool previous_match = false;
  switch (step.behavior) {
    case SplitBehavior::kIsolated:
      for (auto& p : parts) kept.push_back({p.first, false});
      break;
    case SplitBehavior::kRemoved:
      kept = parts;
      break;
    case SplitBehavior::kContiguous:
      for (auto& p : parts) {
        if (p.second == previous_match && !kept.empty()) kept.back().first.second = p.first.second;
        else kept.push_back({p.first, false});
        previous_match = p.second;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (auto& p : parts) {
        if (p.second && !previous_match && !kept.empty()) kept.back().first.second = p.first.second;
        else kept.push_back({p.first, false});
        previous_match = p.second;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->second && !previous_match && !kept.empty()) kept.back().first.first = it->first.first;
        else kept.push_back({it->first, false});
        previous_match = it->second;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  std::vector<std::string> out;
  for (auto& [range, remove] : kept)
    if (!remove && range.second > range.first) out.push_back(s.substr(range.first, range.second - range.first));
  return out;
}

std::string hex_byte(unsigned char b) {
  const char* d = "0123456789abcdef";
  return std::string("0x") + d[b >> 4] + d[b & 15];
}

}  // namespace

HfTokenizer::HfTokenizer(HfTokenizerSpec spec, std::string file, const SpecialTokenHints& hints)
    : spec_(std::move(spec)),
      file_(std::move(file)),
      raw_matcher_(with_normalized(spec_.added_tokens, false)),
      normalized_matcher_(with_normalized(spec_.added_tokens, true)) {
  int64_t max_id = -1;
  for (const auto& [text, id] : spec_.model.vocab) max_id = std::max<int64_t>(max_id, id);
  for (const auto& t : spec_.added_tokens) max_id = std::max(max_id, t.id);
  vocab_size_ = max_id + 1;
  for (const auto& [text, id] : spec_.model.vocab) id_to_token_[id] = text;
  for (const auto& t : spec_.added_tokens) {
    id_to_token_[t.id] = t.content;
    added_ids_.emplace(t.content, t.id);
  }
  auto known = [&](int64_t id, const std::string& what) {
    if (!id_to_token_.count(id))
      throw UsageError(file_ + ": " + what + " id " + std::to_string(id) + " is not in the vocabulary");
    return id;
  };
  for (int64_t id : spec_.template_prefix) known(id, "post_processor template token");
  for (int64_t id : spec_.template_suffix) known(id, "post_processor template token");
  if (spec_.template_prefix.size() > 1)
    throw UsageError(file_ + ": field post_processor: the template puts " +
                     std::to_string(spec_.template_prefix.size()) +
                     " tokens before $A; fabtrain adds at most one BOS");
  if (!spec_.template_prefix.empty()) bos_ = spec_.template_prefix[0];

  auto by_text = [&](const std::string& text, const std::string& what) {
    auto id = token_id(text);
    if (!id) throw UsageError(file_ + ": " + what + " \"" + text + "\" (tokenizer_config.json) is not a token");
    return *id;
  };
  if (hints.eos_id) eos_ = known(*hints.eos_id, "eos_token_id (config.json)");
  else if (hints.eos_token) eos_ = by_text(*hints.eos_token, "eos_token");
  else if (spec_.template_suffix.size() == 1) eos_ = spec_.template_suffix[0];
  else
    throw UsageError(file_ + ": no EOS token: config.json has no eos_token_id, tokenizer_config.json no "
                             "eos_token, and the post_processor template adds none; packing needs one "
                             "(add eos_token_id to config.json)");
  if (hints.pad_id) pad_ = known(*hints.pad_id, "pad_token_id (config.json)");
  else if (hints.pad_token) pad_ = by_text(*hints.pad_token, "pad_token");
}

std::optional<int64_t> HfTokenizer::token_id(const std::string& text) const {
  if (auto it = added_ids_.find(text); it != added_ids_.end()) return it->second;
  if (auto it = spec_.model.vocab.find(text); it != spec_.model.vocab.end()) return it->second;
  return std::nullopt;
}

std::optional<int64_t> HfTokenizer::special_token_id(const std::string& token) const {
  auto it = added_ids_.find(token);
  if (it == added_ids_.end()) return std::nullopt;
  return it->second;
}

void HfTokenizer::encode_text(std::string_view text, std::vector<int64_t>& out) const {
  std::vector<std::string> pieces{std::string(text)};
  for (const PreTokenizerStep& step : spec_.pre_tokenizer) {
    std::vector<std::string> next;
    for (std::string& p : pieces) {
      if (step.kind == PreTokenizerStep::Kind::kByteLevel) {
        if (step.add_prefix_space && (p.empty() || p[0] != ' ')) p.insert(p.begin(), ' ');
        if (!step.regex) {
          next.push_back(std::move(p));
          continue;
        }
        PreTokenizerStep isolated = step;
        isolated.behavior = SplitBehavior::kIsolated;
        isolated.invert = false;
        for (auto& s : split_piece(p, isolated)) next.push_back(std::move(s));
      } else {
        for (auto& s : split_piece(p, step)) next.push_back(std::move(s));
      }
    }
    pieces = std::move(next);
  }
  std::string missing;
  for (const std::string& p : pieces)
    if (!spec_.model.tokenize(to_byte_level(p), out, &missing))
      throw UsageError(file_ + ": the character \"" + missing +
                       "\" is not in model.vocab and the model has no unk_token; this tokenizer cannot "
                       "encode the text");
}

std::vector<int64_t> HfTokenizer::encode(const std::string& text) const {
  size_t bad = first_invalid_utf8(text);
  if (bad != text.size())
    throw UsageError(file_ + ": cannot encode text that is not UTF-8 (byte " +
                     hex_byte(static_cast<unsigned char>(text[bad])) + " at offset " + std::to_string(bad) + ")");
  std::vector<int64_t> out;
  for (const Piece& a : raw_matcher_.split(text)) {
    if (a.id >= 0) {
      out.push_back(a.id);
      continue;
    }
    for (const Piece& b : normalized_matcher_.split(a.text)) {
      if (b.id >= 0) out.push_back(b.id);
      else encode_text(b.text, out);
    }
  }
  return out;
}

std::vector<int64_t> HfTokenizer::encode_with_template(const std::string& text) const {
  std::vector<int64_t> out = spec_.template_prefix;
  for (int64_t id : encode(text)) out.push_back(id);
  out.insert(out.end(), spec_.template_suffix.begin(), spec_.template_suffix.end());
  return out;
}

std::string HfTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string bytes;
  for (int64_t id : ids) {
    auto it = id_to_token_.find(id);
    if (it == id_to_token_.end())
      throw UsageError(file_ + ": id " + std::to_string(id) + " is not in the vocabulary");
    const std::string& tok = it->second;
    // HF's ByteLevel decoder: a token whose characters are all byte characters becomes those
    // bytes; any other token (an added token such as "<|x|> y") is taken as its own UTF-8.
    std::string as_bytes;
    bool all_bytes = true;
    for (size_t i = 0; i < tok.size() && all_bytes;) {
      auto cp = next_code_point(tok, i);
      auto b = cp ? byte_level_byte(*cp) : std::nullopt;
      if (b) as_bytes.push_back(static_cast<char>(*b));
      else all_bytes = false;
    }
    bytes += all_bytes ? as_bytes : tok;
  }
  return utf8_lossy(bytes);
}

std::unique_ptr<HfTokenizer> load_hf_tokenizer(const std::filesystem::path& file, const SpecialTokenHints& hints) {
  const std::string text = read_regular_file(file, kMaxTokenizerFileBytes, kTokenizerFileLimitWhy);
  nlohmann::json doc;
  try {
    doc = parse_json_sorted(text, file.string());
  } catch (const JsonReadError& e) {
    throw UsageError(e.what());
  }
  return std::make_unique<HfTokenizer>(parse_tokenizer_json(doc, file.string()), file.string(), hints);
}

}  // namespace fabkit::trainer
