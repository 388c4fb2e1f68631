#include "trainer/data/dataset.h"

#include <cmath>

#include "common/errors.h"
#include "trainer/data/chat_template.h"
#include "trainer/data/jsonl_reader.h"
#include "trainer/data/sampler.h"
#include "trainer/model/ignore_label.h"

namespace fabkit::trainer {

std::string to_string(DataFormat f) {
  switch (f) {
    case DataFormat::kAuto: return "auto";
    case DataFormat::kText: return "text";
    case DataFormat::kInputIds: return "input_ids";
    case DataFormat::kChat: return "chat";
  }
  return "?";
}

DataFormat parse_data_format(const std::string& s) {
  if (s == "auto") return DataFormat::kAuto;
  if (s == "text") return DataFormat::kText;
  if (s == "input_ids") return DataFormat::kInputIds;
  if (s == "chat" || s == "messages") return DataFormat::kChat;
  throw UsageError("data format \"" + s + "\": expected auto, text, input_ids or chat");
}

DataFormat detect_format(const Json& r, const DataOptions& o, const std::string& where) {
  if (o.format != DataFormat::kAuto) return o.format;
  if (r.contains("messages")) return DataFormat::kChat;
  if (r.contains("input_ids")) return DataFormat::kInputIds;
  if (r.contains(o.text_column)) return DataFormat::kText;
  throw UsageError(where + ": the record has none of \"messages\" (chat), \"input_ids\" "
                           "(pre-tokenized) or \"" + o.text_column + "\" (--text-column)");
}

namespace {

std::vector<int64_t> id_array(const Json& v, const std::string& field, int64_t vocab_size,
                              bool allow_ignore, const std::string& where) {
  if (!v.is_array()) throw UsageError(where + ": \"" + field + "\" must be an array of token ids");
  std::vector<int64_t> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const Json& x = v[i];
    bool ok = x.is_number_integer();
    int64_t id = ok ? x.get<int64_t>() : 0;
    if (ok && allow_ignore && id == kIgnoreLabel) {
      out.push_back(id);
      continue;
    }
    if (!ok || id < 0 || (vocab_size > 0 && id >= vocab_size))
      throw UsageError(where + ": \"" + field + "\"[" + std::to_string(i) + "] = " + x.dump() +
                       " is not a token id in [0, " +
                       (vocab_size > 0 ? std::to_string(vocab_size) : std::string("inf")) + ")");
    out.push_back(id);
  }
  return out;
}

}  // namespace

Sequence record_to_sequence(const Json& r, DataFormat format, const Tokenizer& tok,
                            const DataOptions& o, const std::string& where) {
  Sequence s;
  switch (format) {
    case DataFormat::kChat:
      if (!r.contains("messages")) throw UsageError(where + ": missing column \"messages\"");
      if (o.chat_template != "chatml")
        throw UsageError("--chat-template " + o.chat_template + ": only chatml is implemented");
      return render_chatml(r.at("messages"), tok, where);
    case DataFormat::kInputIds:
      if (!r.contains("input_ids")) throw UsageError(where + ": missing column \"input_ids\"");
      s.ids = id_array(r.at("input_ids"), "input_ids", o.vocab_size, false, where);
      if (r.contains("labels")) {
        s.labels = id_array(r.at("labels"), "labels", o.vocab_size, true, where);
        if (s.labels.size() != s.ids.size())
          throw UsageError(where + ": \"labels\" has " + std::to_string(s.labels.size()) +
                           " entries but \"input_ids\" has " + std::to_string(s.ids.size()));
      } else {
        s.labels = s.ids;
      }
      break;
    case DataFormat::kText:
    case DataFormat::kAuto:
      if (!r.contains(o.text_column))
        throw UsageError(where + ": missing column \"" + o.text_column + "\" (--text-column)");
      if (!r.at(o.text_column).is_string())
        throw UsageError(where + ": column \"" + o.text_column + "\" must be a string, found " +
                         std::string(r.at(o.text_column).type_name()));
      if (tok.bos_id()) s.ids.push_back(*tok.bos_id());
      for (int64_t id : tok.encode(r.at(o.text_column).get<std::string>())) s.ids.push_back(id);
      s.labels = s.ids;
      break;
  }
  if (s.ids.empty()) throw UsageError(where + ": the record has no tokens");
  return s;
}

namespace {

// EOS after each record; for chat it is learnt only when the assistant spoke last.
void append_with_eos(const Sequence& s, int64_t eos, std::vector<int64_t>& ids, std::vector<int64_t>& labels) {
  ids.insert(ids.end(), s.ids.begin(), s.ids.end());
  labels.insert(labels.end(), s.labels.begin(), s.labels.end());
  if (s.ids.back() != eos) {
    ids.push_back(eos);
    labels.push_back(s.labels.back() == kIgnoreLabel ? kIgnoreLabel : eos);
  }
}

Example pad_to(std::vector<int64_t> ids, std::vector<int64_t> labels, int64_t max_length, int64_t pad) {
  Example e;
  e.attention_mask.assign(ids.size(), 1);
  e.attention_mask.resize(max_length, 0);
  ids.resize(max_length, pad);
  labels.resize(max_length, kIgnoreLabel);
  e.input_ids = std::move(ids);
  e.labels = std::move(labels);
  return e;
}

}  // namespace

std::vector<Example> pack_sequences(const std::vector<Sequence>& seqs, int64_t max_length,
                                    int64_t eos, int64_t pad) {
  FABKIT_ENFORCE(max_length >= 2, "max_length must be at least 2");
  std::vector<int64_t> ids, labels;
  for (const auto& s : seqs) append_with_eos(s, eos, ids, labels);
  std::vector<Example> out;
  for (size_t at = 0; at < ids.size(); at += max_length) {
    size_t end = std::min(ids.size(), at + static_cast<size_t>(max_length));
    out.push_back(pad_to({ids.begin() + at, ids.begin() + end}, {labels.begin() + at, labels.begin() + end},
                         max_length, pad));
  }
  return out;
}

std::vector<Example> pad_sequences(const std::vector<Sequence>& seqs, int64_t max_length, int64_t eos,
                                   int64_t pad, size_t* truncated) {
  FABKIT_ENFORCE(max_length >= 2, "max_length must be at least 2");
  std::vector<Example> out;
  for (const auto& s : seqs) {
    std::vector<int64_t> ids, labels;
    append_with_eos(s, eos, ids, labels);
    if (static_cast<int64_t>(ids.size()) > max_length) {
      ids.resize(max_length);
      labels.resize(max_length);
      if (truncated) ++*truncated;
    }
    out.push_back(pad_to(std::move(ids), std::move(labels), max_length, pad));
  }
  return out;
}

namespace {

struct ReadSequences {
  std::vector<Sequence> seqs;
  DataStats stats;
};

ReadSequences read_sequences(const std::filesystem::path& file, const Tokenizer& tok, const DataOptions& o) {
  JsonlContents c = read_jsonl(file, o.skip_bad_lines);
  ReadSequences out;
  DataFormat format = o.format;
  for (const auto& rec : c.records) {
    std::string where = line_ref(file, rec.line);
    try {
      if (format == DataFormat::kAuto) format = detect_format(rec.value, o, where);
      out.seqs.push_back(record_to_sequence(rec.value, format, tok, o, where));
    } catch (const UsageError& e) {
      reject_line(c, o.skip_bad_lines, e.what());
    }
  }
  out.stats.format = format;
  out.stats.records = out.seqs.size();
  out.stats.lines_skipped = c.lines_skipped;
  out.stats.skip_reasons = c.skip_reasons;
  if (out.seqs.empty())
    throw UsageError(file.string() + ": no usable records (" + std::to_string(c.lines_skipped) +
                     " lines skipped) — the dataset is empty");
  return out;
}

std::vector<Example> to_examples(const std::vector<Sequence>& seqs, const Tokenizer& tok,
                                 const DataOptions& o, DataStats& stats) {
  int64_t pad = tok.pad_id().value_or(tok.eos_id());  // masked out either way
  auto ex = o.packing ? pack_sequences(seqs, o.max_length, tok.eos_id(), pad)
                      : pad_sequences(seqs, o.max_length, tok.eos_id(), pad, &stats.truncated);
  for (const auto& e : ex)
    for (int64_t m : e.attention_mask) stats.tokens += m;
  return ex;
}

}  // namespace

LoadedData load_dataset(const std::filesystem::path& file, const Tokenizer& tok, const DataOptions& o) {
  if (o.max_length < 2) throw UsageError("--max-length " + std::to_string(o.max_length) + ": must be >= 2");
  if (o.valid_split < 0 || o.valid_split >= 1)
    throw UsageError("--valid-split " + std::to_string(o.valid_split) + ": must be in [0, 1)");
  LoadedData out;
  ReadSequences train = read_sequences(file, tok, o);
  std::vector<Sequence> valid_seqs;
  out.train_stats = train.stats;
  if (!o.valid_file.empty()) {
    ReadSequences v = read_sequences(o.valid_file, tok, o);
    valid_seqs = std::move(v.seqs);
    out.valid_stats = v.stats;
  } else if (o.valid_split > 0) {
    // Split records (not packed blocks) so no document straddles train and validation.
    size_t n = train.seqs.size();
    size_t n_valid = std::max<size_t>(1, static_cast<size_t>(std::llround(o.valid_split * n)));
    if (n_valid >= n)
      throw UsageError(file.string() + ": --valid-split " + std::to_string(o.valid_split) + " of " +
                       std::to_string(n) + " records leaves nothing to train on");
    std::vector<size_t> perm = split_permutation(n, o.seed);
    std::vector<bool> is_valid(n, false);
    for (size_t i = 0; i < n_valid; ++i) is_valid[perm[i]] = true;
    std::vector<Sequence> keep;
    for (size_t i = 0; i < n; ++i) (is_valid[i] ? valid_seqs : keep).push_back(std::move(train.seqs[i]));
    train.seqs = std::move(keep);
    out.valid_stats.format = out.train_stats.format;
    out.valid_stats.records = valid_seqs.size();
    out.train_stats.records = train.seqs.size();
  }
  out.train = to_examples(train.seqs, tok, o, out.train_stats);
  if (!valid_seqs.empty()) out.valid = to_examples(valid_seqs, tok, o, out.valid_stats);
  return out;
}

}  // namespace fabkit::trainer
