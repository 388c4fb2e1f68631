#include "trainer/tokenizer/hf_tokenizer_json.h"

#include "common/errors.h"

namespace fabkit::trainer {

const char* const kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {
using nlohmann::json;

constexpr const char* kHint =
    "; fabkit reads byte-level BPE tokenizer.json files (GPT-2, Llama 3, Mistral style) only: use "
    "the model's SentencePiece tokenizer.model if it has one, or pre-tokenize the data into input_ids";

// Errors name the file and the field, as "FILE: field pre_tokenizer.pretokenizers[1].type: ...".
struct Ctx {
  const std::string& file;
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw UsageError(file + ": field " + field + ": " + what);
  }
  [[noreturn]] void unsupported(const std::string& field, const std::string& what, const std::string& why = "") const {
    throw UsageError(file + ": field " + field + ": " + what + " is not supported" + (why.empty() ? "" : " (" + why + ")") +
                     kHint);
  }
  const json& member(const json& obj, const std::string& field, const char* key) const {
    if (!obj.is_object()) fail(field, "expected an object, found " + std::string(obj.type_name()));
    auto it = obj.find(key);
    if (it == obj.end()) fail(field.empty() ? std::string(key) : field + "." + key, "missing");
    return *it;
  }
  std::string string(const json& obj, const std::string& field, const char* key) const {
    const json& v = member(obj, field, key);
    if (!v.is_string()) fail(field + "." + key, "expected a string, found " + v.dump());
    return v.get<std::string>();
  }
  // A boolean that may be absent (then `dflt`).
  bool flag(const json& obj, const std::string& field, const char* key, bool dflt) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return dflt;
    if (!it->is_boolean()) fail(field + "." + key, "expected true or false, found " + it->dump());
    return it->get<bool>();
  }
  int32_t id(const json& v, const std::string& field) const {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      fail(field, "expected a token id in [0, 2^31), found " + v.dump());
    return static_cast<int32_t>(v.get<int64_t>());
  }
};

// An absent or null optional string, or an empty one, counts as unset.
bool set_string(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty());
}

void parse_model(const Ctx& c, const json& doc, HfTokenizerSpec& spec) {
  const json& m = c.member(doc, "", "model");
  if (!m.is_object()) c.fail("model", "expected an object");
  if (!m.contains("type"))
    c.fail("model.type", "missing (files written by tokenizers < 0.9 lack it; re-save the tokenizer with a "
                         "current `tokenizers`)");
  std::string type = c.string(m, "model", "type");
  if (type != "BPE") c.unsupported("model.type", "\"" + type + "\"");
  if (m.contains("dropout") && !m.at("dropout").is_null() &&
      !(m.at("dropout").is_number() && m.at("dropout").get<double>() == 0.0))
    c.unsupported("model.dropout", m.at("dropout").dump(), "BPE dropout makes encoding random");
  if (set_string(m, "continuing_subword_prefix"))
    c.unsupported("model.continuing_subword_prefix", m.at("continuing_subword_prefix").dump());
  if (set_string(m, "end_of_word_suffix")) c.unsupported("model.end_of_word_suffix", m.at("end_of_word_suffix").dump());
  if (c.flag(m, "model", "byte_fallback", false))
    c.unsupported("model.byte_fallback", "true", "SentencePiece-style <0xNN> byte tokens");
  spec.model.ignore_merges = c.flag(m, "model", "ignore_merges", false);
  spec.model.fuse_unk = c.flag(m, "model", "fuse_unk", false);

  const json& vocab = c.member(m, "model", "vocab");
  if (!vocab.is_object()) c.fail("model.vocab", "expected an object {token: id}");
  spec.model.vocab.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it)
    spec.model.vocab.emplace(it.key(), c.id(it.value(), "model.vocab[\"" + it.key() + "\"]"));
  if (set_string(m, "unk_token")) {
    std::string unk = c.string(m, "model", "unk_token");
    auto it = spec.model.vocab.find(unk);
    if (it == spec.model.vocab.end()) c.fail("model.unk_token", "\"" + unk + "\" is not in model.vocab");
    spec.model.unk_id = it->second;
  }

  const json& merges = c.member(m, "model", "merges");
  if (!merges.is_array()) c.fail("model.merges", "expected an array");
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& e = merges[i];
    std::string field = "model.merges[" + std::to_string(i) + "]";
    std::string left, right;
    if (e.is_string()) {  // "a b" (files written before tokenizers 0.20)
      const std::string s = e.get<std::string>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        c.fail(field, "expected \"left right\" (two tokens, one space), found " + e.dump());
      left = s.substr(0, sp), right = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {  // ["a", "b"]
      left = e[0].get<std::string>(), right = e[1].get<std::string>();
    } else {
      c.fail(field, "expected \"left right\" or [\"left\", \"right\"], found " + e.dump());
    }
    if (!spec.model.add_merge(left, right))
      c.fail(field, "\"" + left + "\", \"" + right + "\" or their concatenation is not in model.vocab");
  }
}

void parse_added_tokens(const Ctx& c, const json& doc, HfTokenizerSpec& spec) {
  auto it = doc.find("added_tokens");
  if (it == doc.end() || it->is_null()) return;
  if (!it->is_array()) c.fail("added_tokens", "expected an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    std::string field = "added_tokens[" + std::to_string(i) + "]";
    AddedToken a;
    a.id = c.id(c.member(t, field, "id"), field + ".id");
    a.content = c.string(t, field, "content");
    a.special = c.flag(t, field, "special", false);
    a.lstrip = c.flag(t, field, "lstrip", false);
    a.rstrip = c.flag(t, field, "rstrip", false);
    a.normalized = c.flag(t, field, "normalized", !a.special);  // HF's default
    if (c.flag(t, field, "single_word", false)) c.unsupported(field + ".single_word", "true");
    spec.added_tokens.push_back(std::move(a));
  }
}

void parse_normalizer(const Ctx& c, const json& doc) {
  auto it = doc.find("normalizer");
  if (it == doc.end() || it->is_null()) return;
  // An empty Sequence normalizes nothing; anything else changes the text before BPE.
  if (it->is_object() && it->value("type", "") == "Sequence" && it->contains("normalizers") &&
      it->at("normalizers").is_array() && it->at("normalizers").empty())
    return;
  std::string type = it->is_object() ? it->value("type", "?") : it->dump();
  c.unsupported("normalizer", "type \"" + type + "\"",
                "fabkit implements no normalizer: NFC, Lowercase, Prepend, Replace... change the text before BPE");
}

SplitBehavior parse_behavior(const Ctx& c, const std::string& field, const std::string& b) {
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  c.fail(field, "\"" + b + "\" is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

PreTokenizerStep parse_pre_step(const Ctx& c, const json& p, const std::string& field) {
  std::string type = c.string(p, field, "type");
  PreTokenizerStep s;
  if (type == "ByteLevel") {
    s.kind = PreTokenizerStep::Kind::kByteLevel;
    s.add_prefix_space = c.flag(p, field, "add_prefix_space", true);
    if (c.flag(p, field, "use_regex", true))
      s.regex = std::make_shared<Pcre2Regex>(kGpt2SplitPattern, false, c.file + ": GPT-2 split pattern");
    return s;
  }
  if (type != "Split") c.unsupported(field + ".type", "\"" + type + "\"");
  const json& pat = c.member(p, field, "pattern");
  std::string where = c.file + ": field " + field + ".pattern";
  if (pat.is_object() && pat.contains("Regex") && pat.at("Regex").is_string())
    s.regex = std::make_shared<Pcre2Regex>(pat.at("Regex").get<std::string>(), false, where);
  else if (pat.is_object() && pat.contains("String") && pat.at("String").is_string())
    s.regex = std::make_shared<Pcre2Regex>(pat.at("String").get<std::string>(), true, where);
  else
    c.fail(field + ".pattern", "expected {\"Regex\": \"...\"} or {\"String\": \"...\"}, found " + pat.dump());
  s.behavior = parse_behavior(c, field + ".behavior", c.string(p, field, "behavior"));
  s.invert = c.flag(p, field, "invert", false);
  return s;
}

void parse_pre_tokenizer(const Ctx& c, const json& doc, HfTokenizerSpec& spec) {
  auto it = doc.find("pre_tokenizer");
  if (it == doc.end() || it->is_null())
    c.unsupported("pre_tokenizer", "null", "a BPE without the ByteLevel pre-tokenizer, SentencePiece-style");
  const json& p = *it;
  std::string type = c.string(p, "pre_tokenizer", "type");
  if (type == "Sequence") {
    const json& list = c.member(p, "pre_tokenizer", "pretokenizers");
    if (!list.is_array()) c.fail("pre_tokenizer.pretokenizers", "expected an array");
    for (size_t i = 0; i < list.size(); ++i)
      spec.pre_tokenizer.push_back(parse_pre_step(c, list[i], "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]"));
  } else {
    spec.pre_tokenizer.push_back(parse_pre_step(c, p, "pre_tokenizer"));
  }
  // ByteLevel maps the text to byte characters; a Split after it would see those characters, and
  // without it the vocabulary's byte characters are never produced.
  for (size_t i = 0; i < spec.pre_tokenizer.size(); ++i) {
    bool last = i + 1 == spec.pre_tokenizer.size();
    bool byte_level = spec.pre_tokenizer[i].kind == PreTokenizerStep::Kind::kByteLevel;
    if (byte_level != last)
      c.unsupported("pre_tokenizer", last ? "a pre-tokenizer that does not end with ByteLevel"
                                          : "a pre-tokenizer after ByteLevel");
  }
}

void parse_decoder(const Ctx& c, const json& doc) {
  auto it = doc.find("decoder");
  if (it == doc.end() || it->is_null()) c.unsupported("decoder", "null", "HF then joins tokens with spaces");
  std::string type = c.string(*it, "decoder", "type");
  if (type != "ByteLevel") c.unsupported("decoder.type", "\"" + type + "\"");
}

// The ids a TemplateProcessing "single" puts before and after $A.
void parse_template(const Ctx& c, const json& t, const std::string& field, HfTokenizerSpec& spec) {
  const json& single = c.member(t, field, "single");
  const json& specials = c.member(t, field, "special_tokens");
  if (!single.is_array()) c.fail(field + ".single", "expected an array");
  bool seen_a = false;
  for (size_t i = 0; i < single.size(); ++i) {
    std::string f = field + ".single[" + std::to_string(i) + "]";
    const json& item = single[i];
    if (item.is_object() && item.contains("Sequence")) {
      std::string id = c.string(item.at("Sequence"), f + ".Sequence", "id");
      if (id != "A" || seen_a) c.fail(f, "a single-sequence template holds $A once, found " + item.dump());
      seen_a = true;
    } else if (item.is_object() && item.contains("SpecialToken")) {
      std::string name = c.string(item.at("SpecialToken"), f + ".SpecialToken", "id");
      if (!specials.is_object() || !specials.contains(name))
        c.fail(field + ".special_tokens", "lacks \"" + name + "\" used by " + f);
      const json& ids = c.member(specials.at(name), field + ".special_tokens." + name, "ids");
      if (!ids.is_array()) c.fail(field + ".special_tokens." + name + ".ids", "expected an array");
      for (const json& id : ids) (seen_a ? spec.template_suffix : spec.template_prefix).push_back(c.id(id, f));
    } else {
      c.fail(f, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}, found " + item.dump());
    }
  }
  if (!seen_a) c.fail(field + ".single", "has no $A");
}

void parse_post_processor(const Ctx& c, const json& p, const std::string& field, HfTokenizerSpec& spec) {
  if (p.is_null()) return;
  std::string type = c.string(p, field, "type");
  if (type == "ByteLevel") return;  // only adjusts offsets, never ids
  if (type == "TemplateProcessing") return parse_template(c, p, field, spec);
  if (type == "Sequence") {
    const json& list = c.member(p, field, "processors");
    if (!list.is_array()) c.fail(field + ".processors", "expected an array");
    for (size_t i = 0; i < list.size(); ++i)
      parse_post_processor(c, list[i], field + ".processors[" + std::to_string(i) + "]", spec);
    return;
  }
  c.unsupported(field + ".type", "\"" + type + "\"");
}

}  // namespace

HfTokenizerSpec parse_tokenizer_json(const json& doc, const std::string& file) {
  Ctx c{file};
  if (!doc.is_object()) c.fail("(top level)", "expected a JSON object, found " + std::string(doc.type_name()));
  HfTokenizerSpec spec;
  // Both change encode()'s output length; fabtrain truncates and pads by --max-length itself.
  for (const char* key : {"truncation", "padding"})
    if (doc.contains(key) && !doc.at(key).is_null())
      c.unsupported(key, doc.at(key).dump(), "set it to null: fabtrain truncates and pads by --max-length");
  parse_model(c, doc, spec);
  parse_added_tokens(c, doc, spec);
  parse_normalizer(c, doc);
  parse_pre_tokenizer(c, doc, spec);
  parse_decoder(c, doc);
  if (doc.contains("post_processor")) parse_post_processor(c, doc.at("post_processor"), "post_processor", spec);
  return spec;
}

}  // namespace fabkit::trainer
