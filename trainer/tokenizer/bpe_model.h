// The BPE model of a Hugging Face tokenizer.json: vocabulary, ranked merges, and the merge loop
// of HF tokenizers (models/bpe/word.rs), so ids match the reference token for token.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fabkit::trainer {

class BpeModel {
 public:
  // Token text -> id. Ids are < 2^31 (checked by the loader).
  std::unordered_map<std::string, int32_t> vocab;
  // ignore_merges (Llama 3): a pre-token that is itself in the vocabulary is emitted as that one
  // id without running the merges (the merges would not always rebuild it).
  bool ignore_merges = false;
  std::optional<int32_t> unk_id;  // model.unk_token; without it an unknown character is an error
  bool fuse_unk = false;          // consecutive unknown characters become one unk

  // Adds merge (left, right) with the next rank; the later of two equal pairs wins, as in HF's
  // map. Returns false (nothing added) when left, right or left+right is not in the vocabulary.
  bool add_merge(const std::string& left, const std::string& right);
  size_t merge_count() const { return merges_.size(); }

  // One pre-token (already mapped to byte-level characters) to ids, appended to `out`. A
  // character missing from the vocabulary with no unk_token: false is returned with that
  // character in *missing, nothing appended.
  bool tokenize(std::string_view word, std::vector<int64_t>& out, std::string* missing) const;

 private:
  struct Merge {
    uint32_t rank;
    int32_t new_id;
  };
  static uint64_t key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  std::unordered_map<uint64_t, Merge> merges_;
  uint32_t next_rank_ = 0;
};

}  // namespace fabkit::trainer
