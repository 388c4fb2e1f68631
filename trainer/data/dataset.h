// Training examples from JSONL: a text column, pre-tokenized input_ids, or chat messages rendered
// with ChatML. Every example ends up exactly max_length tokens long (packed blocks or one padded
// example) with labels aligned to input_ids (HF convention: the loss shifts; -100 = not counted)
// and an attention mask (1 = token, 0 = padding). Knows nothing of ranks: sharding is an index
// computation (sampler.h) over the same global order on every rank.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"
#include "trainer/tokenizer/tokenizer.h"

namespace fabkit::trainer {

enum class DataFormat { kAuto, kText, kInputIds, kChat };
std::string to_string(DataFormat f);
DataFormat parse_data_format(const std::string& s);  // auto|text|input_ids|chat

struct DataOptions {
  DataFormat format = DataFormat::kAuto;  // auto: messages > input_ids > text_column, first record
  std::string text_column = "text";
  std::string chat_template = "chatml";   // the only template implemented
  int64_t max_length = 512;
  bool packing = true;         // false: one example per record, truncated/padded to max_length
  double valid_split = 0.0;    // fraction of records held out (ignored when valid_file is set)
  std::filesystem::path valid_file;
  uint64_t seed = 0;           // the split (and, in sampler.h, the epoch order)
  bool skip_bad_lines = false;
  int64_t vocab_size = 0;      // when > 0, input_ids must be below it
};

// One record before packing: token ids and their labels (same length).
struct Sequence {
  std::vector<int64_t> ids;
  std::vector<int64_t> labels;
};

struct Example {
  std::vector<int64_t> input_ids;
  std::vector<int64_t> labels;
  std::vector<int64_t> attention_mask;
};

struct DataStats {
  DataFormat format = DataFormat::kAuto;
  size_t records = 0;          // usable records read
  size_t lines_skipped = 0;
  std::vector<std::string> skip_reasons;
  size_t truncated = 0;        // padding mode: records cut at max_length
  int64_t tokens = 0;          // real (non-padding) tokens in the examples
};

struct LoadedData {
  std::vector<Example> train;
  std::vector<Example> valid;  // empty without valid_split / valid_file
  DataStats train_stats, valid_stats;
};

// Reads, tokenizes, splits and packs/pads. UsageError naming file:line for bad records, and for
// an empty result ("no examples").
LoadedData load_dataset(const std::filesystem::path& file, const Tokenizer& tok, const DataOptions& o);

// Building blocks (tested one by one).
Sequence record_to_sequence(const Json& record, DataFormat format, const Tokenizer& tok,
                            const DataOptions& o, const std::string& where);
DataFormat detect_format(const Json& first_record, const DataOptions& o, const std::string& where);
// Each sequence followed by EOS (unless it already ends with one), concatenated, cut into
// max_length blocks; the last partial block is padded rather than dropped.
std::vector<Example> pack_sequences(const std::vector<Sequence>& seqs, int64_t max_length,
                                    int64_t eos_id, int64_t pad_id);
// One example per sequence (+EOS), truncated to max_length then padded; counts truncations.
std::vector<Example> pad_sequences(const std::vector<Sequence>& seqs, int64_t max_length,
                                   int64_t eos_id, int64_t pad_id, size_t* truncated);

}  // namespace fabkit::trainer
